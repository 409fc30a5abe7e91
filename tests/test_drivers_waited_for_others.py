"""A load generator that waited for a CPU though it and the workers had one each is not said to share the CPUs with
them: 'latency -n 50 -c 4 -w 1 --driver-procs 1' on this busy 2-CPU machine (load 12) warned 'the 1 driver process
and 1 worker share 2 CPUs: drivers waited for a CPU up to 50% of the time', blaming a sharing that one CPU each rules
out; the wait was other processes'. Where drivers and workers outnumber the CPUs the warning is as before."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from accept_order.core.measures import DriverStats
from accept_order.core.run_warnings import WarningKind
from accept_order.core.spec import ServerSpec
from accept_order.experiments.own_settings import acceptors
from accept_order.loads.client_warnings import driver_warnings

GOLDEN = Path(__file__).parent / "data" / "golden" / "latency.json"
STARVED = DriverStats(0, 4, 50, wall_s=2.0, cpu_s=0.1, runqueue_s=1.0)  # waited half its time for a CPU


def test_a_cpu_each_puts_the_wait_on_other_processes() -> None:
    (note,) = driver_warnings([STARVED], workers=1, cpus=2, procs=1)
    assert note.kind is WarningKind.DRIVERS_WAITED_FOR_OTHERS
    assert str(note) == (
        "the load generator's driver waited for a CPU up to 50% of the time though 1 driver process and 1 worker had "
        "a CPU each of the 2: other processes (host-wide) took them, so client-side delay is part of these latencies"
    )


def test_more_drivers_and_workers_than_cpus_share_them() -> None:
    (note,) = driver_warnings([STARVED, STARVED], workers=2, cpus=2, procs=2)
    assert note.kind is WarningKind.DRIVERS_STARVED
    assert str(note).startswith("the 2 driver processes and 2 workers share 2 CPUs: drivers waited")


def test_a_server_process_besides_the_workers_takes_a_cpu_too() -> None:
    # fd-pass's acceptor: 1 driver, 1 worker and the acceptor are three on 2 CPUs, not a CPU each
    (note,) = driver_warnings([STARVED], workers=1, cpus=2, procs=1, helpers=1)
    assert note.kind is WarningKind.DRIVERS_STARVED


def test_an_acceptor_is_fd_pass_s_and_node_s_primary_under_sched_rr() -> None:
    assert [acceptors(ServerSpec(kind=k, mode=m)) for k, m in (("builtin", "fd-pass"), ("node", "sched-rr"))] == [1, 1]
    assert [acceptors(ServerSpec(kind=k, mode=m)) for k, m in (("builtin", "epoll"), ("node", "sched-none"))] == [0, 0]


def test_the_report_counts_fd_pass_acceptor(tmp_path: Path) -> None:
    # 'latency -m fd-pass -w 1 --driver-procs 1' here (load 5): 'though 1 driver process and 1 worker had a CPU each
    # of the 2: other processes (host-wide) took them', of a run whose own acceptor was the third process
    doc = json.loads(GOLDEN.read_text())
    doc["server"]["workers"], doc["load"]["driver_procs"] = 1, 1
    doc["counters"], doc["served"] = doc["counters"][:1], doc["served"][:1]
    doc["drivers"] = doc["drivers"][:1]
    doc["drivers"][0]["runqueue_s"] = doc["drivers"][0]["wall_s"] / 2
    path = tmp_path / "latency.json"
    path.write_text(json.dumps(doc))
    assert "had a CPU each of the 2: other processes" in run_cli(["show", str(path)]).stdout  # no acceptor
    doc["server"]["mode"] = "fd-pass"
    path.write_text(json.dumps(doc))
    out = " ".join(run_cli(["show", str(path)]).stdout.split())
    assert "other processes (host-wide) took them" not in out, out
    assert "the 1 driver process and 1 worker share 2 CPUs: drivers waited for a CPU up to 50%" in out, out
