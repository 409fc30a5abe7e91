"""The load generator's own CPU: per connection in every load result, a warning when it set the pace, and
host-wide CPU figures that do not blame the run's processes for what others used."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from rich.console import Console, RenderableType

from accept_order.core.environment import host_busy
from accept_order.core.load_summary import cpu_us_per_connection
from accept_order.core.measures import DriverStats, WorkerCounters
from accept_order.core.run_warnings import WarningKind
from accept_order.experiments.latency.report import latency_report
from accept_order.experiments.latency.result import LatencyResult
from accept_order.experiments.ramp.result import RampStep
from accept_order.experiments.ramp.step_verdict import signals
from accept_order.loads.generator import client_bound
from accept_order.render.evidence import machine_busy

GOLDEN = Path(__file__).parent / "data" / "golden"
LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")


def render_text(renderable: RenderableType) -> str:
    console = Console(width=400, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def driver(index: int, cpu_s: float, requests: int, wall_s: float = 1.0) -> DriverStats:
    return DriverStats(index=index, slots=1, requests=requests, wall_s=wall_s, cpu_s=cpu_s)


def test_cpu_per_connection_is_all_drivers_cpu_over_all_they_finished() -> None:
    # 0.3 s of CPU over 3000 connections: 100 µs each (not the mean of 100 and 100 by chance: 0.1/1000, 0.2/2000).
    assert cpu_us_per_connection([driver(0, 0.1, 1000), driver(1, 0.2, 2000)]) == 100.0
    assert cpu_us_per_connection([driver(0, 0.3, 1000), driver(1, 0.0, 2000)]) == 100.0
    assert cpu_us_per_connection([driver(0, 0.1, 0)]) is None
    assert cpu_us_per_connection([]) is None


def test_client_bound_needs_a_busy_client_and_idle_workers() -> None:
    busy = [driver(0, 0.95, 1000)]
    warning = client_bound(busy, worker_cpu_s=0.5, wall_s=1.0, cpus=2)
    assert warning is not None and warning.kind is WarningKind.CLIENT_BOUND
    assert "partly the client's" in str(warning) and "25% of the 2 CPUs" in str(warning)
    assert client_bound(busy, worker_cpu_s=1.9, wall_s=1.0, cpus=2) is None  # the workers were busy too
    assert client_bound([driver(0, 0.5, 1000)], worker_cpu_s=0.5, wall_s=1.0, cpus=2) is None  # client not busy
    assert client_bound(busy, worker_cpu_s=None, wall_s=1.0, cpus=2) is None  # the workers' CPU not known


def _golden_latency() -> LatencyResult:
    doc = json.loads((GOLDEN / "latency.json").read_text())
    return LatencyResult.from_dict(doc)


def test_latency_report_says_the_figures_are_partly_the_clients_when_it_set_the_pace() -> None:
    result = _golden_latency()
    wall = result.wall_s
    drivers = tuple(dataclasses.replace(d, wall_s=wall, cpu_s=0.97 * wall, runqueue_s=0.0) for d in result.drivers)
    idle = tuple(dataclasses.replace(c, cpu_s=0.2 * wall) for c in result.counters)
    text = render_text(latency_report(dataclasses.replace(result, drivers=drivers, counters=idle)))
    assert "the server waited for its client, so these figures are partly the client's" in text
    assert "used 97% of a CPU" not in text  # said once, the stronger way
    busy = tuple(dataclasses.replace(c, cpu_s=0.95 * wall) for c in result.counters)
    text = render_text(latency_report(dataclasses.replace(result, drivers=drivers, counters=busy)))
    assert "partly the client's" not in text and "driver 0 used 97% of a CPU" in text
    unknown = tuple(dataclasses.replace(c, cpu_s=None) for c in result.counters)
    assert "partly the client's" not in render_text(
        latency_report(dataclasses.replace(result, drivers=drivers, counters=unknown))
    )


def test_an_old_latency_file_gets_its_cpu_per_connection_from_its_drivers(tmp_path: Path) -> None:
    path = GOLDEN / "latency.json"
    assert "client_cpu_us" not in json.loads(path.read_text())["summary"]  # saved before it existed
    drivers = _golden_latency().drivers
    expected = 1e6 * sum(d.cpu_s for d in drivers) / sum(d.requests for d in drivers)
    shown = run_cli(["show", str(path)], columns=200)
    assert f"drivers ({expected:.0f} CPU-µs per connection)" in shown.stdout
    table = run_cli(["show", str(path), "--format", "csv", "--table", "summary"]).stdout.splitlines()
    header, row = table[0].split(","), table[1].split(",")
    assert float(row[header.index("client_cpu_us")]) == pytest.approx(expected, abs=0.05)
    as_json = json.loads(run_cli(["show", str(path), "--format", "json"]).stdout)
    assert as_json["summary"].get("client_cpu_us", expected) == pytest.approx(expected, abs=0.05)


@LINUX_ONLY
def test_a_latency_run_saves_its_clients_cpu_per_connection(tmp_path: Path) -> None:
    path = tmp_path / "lat.json"
    result = run_cli(["latency", "-w", "2", "-n", "300", "-c", "4", "--json", str(path)], columns=200)
    assert result.exit_code == 0, result.output
    doc = json.loads(path.read_text())
    drivers = doc["drivers"]
    expected = 1e6 * sum(d["cpu_s"] for d in drivers) / sum(d["requests"] for d in drivers)
    assert doc["summary"]["client_cpu_us"] == pytest.approx(expected, abs=0.05) and expected > 0
    assert "CPU-µs per connection" in result.stdout


def _step(**changes: object) -> RampStep:
    step = RampStep(
        kind="rate",
        offered=100.0,
        wall_s=1.0,
        served=(50, 50),
        errors={},
        p50_us=1000,
        p99_us=2000,
        p999_us=3000,
        max_us=3000,
        counters={},
        sockets={},
        queues=(0,),
        worker_cpu=(0.05, 0.05),
        driver_cpu=0.01,
        machine_cpu=0.98,
        client_cpu_us=100.0,
    )
    return dataclasses.replace(step, **changes)  # type: ignore[arg-type]


def test_busy_cpus_are_not_blamed_on_the_run_when_other_processes_used_them() -> None:
    # Workers 0.1 CPU + client 100 µs x 100 connections = 0.01 CPU: 5.5% of 2 CPUs; the host was 98% busy.
    seen = "; ".join(signals(_step(), workers=2, cpus=2))
    assert "98% busy host-wide: other processes (or interrupts) used 92% of the CPUs, this run's own 6%" in seen
    assert "load generator and workers share them" not in seen
    # The run's own processes explain it: said so.
    own = "; ".join(signals(_step(worker_cpu=(0.95, 0.95), client_cpu_us=500.0), workers=2, cpus=2))
    assert "nearly all of it this run's workers and load generator" in own and "other processes" not in own
    assert machine_busy(0.5, own_cpus=4.0, cpus=2) == (
        "all CPUs 50% busy host-wide, nearly all of it this run's workers and load generator (50%)"
    )


def test_a_ramp_step_where_the_client_was_cpu_bound_and_the_workers_idled_says_so() -> None:
    seen = "; ".join(signals(_step(driver_cpu=0.97, machine_cpu=0.5), workers=2, cpus=2))
    assert "load generator CPU-bound (97% of a CPU per process) while the workers idled" in seen
    assert "partly the client's" in seen
    busy = "; ".join(signals(_step(driver_cpu=0.97, worker_cpu=(0.95, 0.95), machine_cpu=0.5), workers=2, cpus=2))
    assert "CPU-bound" in busy and "partly the client's" not in busy


def test_old_counters_without_cpu_leave_the_workers_cpu_unknown() -> None:
    result = _golden_latency()
    assert result.worker_cpu_s is not None
    without = dataclasses.replace(result, counters=(WorkerCounters(index=0, pid=1),))
    assert without.worker_cpu_s is None


def _machine(busy_ticks: int, total_ticks: int, with_busy: bool = True) -> dict[str, object]:
    def state(busy: int, total: int) -> dict[str, object]:
        jiffies = {"total": total, "steal": 0} | ({"busy": busy} if with_busy else {})
        return {"load_average": [0.1, 0.1, 0.1], "cpu_jiffies": jiffies}

    return {"before": state(1000, 10_000), "after": state(1000 + busy_ticks, 10_000 + total_ticks)}


def test_host_busy_is_the_share_of_ticks_between_before_and_after() -> None:
    assert host_busy(_machine(300, 400)) == (0.75, 4.0)
    assert host_busy(_machine(300, 400, with_busy=False)) is None  # a file saved before it was kept
    assert host_busy(_machine(10, 20)) is None  # 0.2 CPU-seconds: whole ticks say too little
    assert host_busy(None) is None


def test_latency_report_names_what_other_processes_used_of_the_host() -> None:
    result = _golden_latency()  # 2 CPUs; workers and drivers used well under 1 CPU-second between them
    own_s = (result.worker_cpu_s or 0) + sum(d.cpu_s for d in result.drivers)
    assert own_s < 0.5
    busy = dataclasses.replace(result, evidence={**result.evidence, "machine": _machine(390, 400)})
    text = render_text(latency_report(busy))
    assert "all CPUs 98% busy host-wide: other processes (or interrupts) used" in text
    assert "so waits for a CPU are partly theirs" in text
    # The run's own processes explain the busy ticks: nothing is said about others.
    quiet = dataclasses.replace(result, evidence={**result.evidence, "machine": _machine(int(100 * own_s), 400)})
    assert "other processes" not in render_text(latency_report(quiet))


def test_counters_from_the_shared_namespace_are_labelled_host_wide() -> None:
    text = render_text(latency_report(_golden_latency()))
    assert "(host-wide: shared network namespace, may include other TCP traffic on this host)" in text


def test_the_model_names_other_processes_when_they_took_the_cpus() -> None:
    from accept_order.experiments.latency.besides_queueing import seen_besides_queueing

    result = _golden_latency()
    busy = dataclasses.replace(result, evidence={**result.evidence, "machine": _machine(390, 400)})
    shares = busy.others_cpu_share
    assert shares is not None and shares[0] == pytest.approx(0.975) and shares[1] > 0.8
    assert any(s.startswith("other processes used 8") or s.startswith("other processes used 9")
               for s in seen_besides_queueing(busy))  # fmt: skip
    own_s = (result.worker_cpu_s or 0) + sum(d.cpu_s for d in result.drivers)
    quiet = dataclasses.replace(result, evidence={**result.evidence, "machine": _machine(int(100 * own_s), 400)})
    assert not any("other processes" in s for s in seen_besides_queueing(quiet))
