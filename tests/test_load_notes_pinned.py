"""A load generator pinned to CPUs of its own (--load-cpus apart from the workers' --cpus) waited for a CPU
behind its own processes, not the workers': the warning says it waited, not that it shares CPUs with them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from accept_order.core.measures import DriverStats
from accept_order.experiments.latency.load_notes import load_notes
from accept_order.experiments.latency.result import LatencyResult

FIXTURE = Path(__file__).parent / "data" / "v2" / "latency.json"


def starved_run(load_cpus: tuple[int, ...], worker_cpus: tuple[int, ...]) -> LatencyResult:
    run = LatencyResult.from_dict(json.loads(FIXTURE.read_text()))
    drivers = tuple(DriverStats(i, 10, 100, wall_s=2.0, cpu_s=0.2, runqueue_s=1.5) for i in range(2))
    server = dataclasses.replace(run.server, workers=2, cpus=worker_cpus)
    load = dataclasses.replace(run.load, driver_procs=2, cpus=load_cpus)
    return dataclasses.replace(run, server=server, load=load, drivers=drivers)


def notes_of(run: LatencyResult) -> str:
    return "\n".join(str(note) for note in load_notes([run]))


def test_drivers_on_cpus_of_their_own_waited_for_each_other_not_for_the_workers() -> None:
    apart = notes_of(starved_run((1,), (0,)))
    assert "the load generator waited for a CPU up to 75% of the time" in apart, apart
    assert "workers share" not in apart and "same 2 CPUs as" not in apart, apart


def test_drivers_beside_the_workers_share_their_cpus() -> None:
    for load_cpus, worker_cpus in (((0, 1), (0,)), ((), (0,)), ((1,), ())):
        shared = notes_of(starved_run(load_cpus, worker_cpus))
        assert "the 2 driver processes and 2 workers share 2 CPUs" in shared, (load_cpus, worker_cpus, shared)
