"""A pool held to a running server whose replies do not name a worker (a hand-started nginx answering 'hello,
world'): `latency --attach PID --port P --protocol http --pool -c 16 --requests-per-connection 0 --duration 4s`
served 67,165 requests, and its kept table read 'accepted 0 0 0 0', 'held at end 0 0 0 0' and 'requests 5 0 0
11' (the kernel's accepts, the only per-worker count such a run has), with 'requests: Jain 0.438'; the model
took the pool for one shared queue. The table now says what was counted (the connections each accepted) and
what was not (the requests over them, those held at the end)."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console, Group

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.kept_compare import kept_repeat_table
from accept_order.experiments.latency.kept_report import kept_csv, kept_parts
from accept_order.experiments.latency.model_check import held_connections
from accept_order.experiments.latency.report import latency_report
from accept_order.experiments.latency.result import LatencyResult

ENV = Environment("Linux", "6.18", "x86_64", 2, 4096, "3.11", "host", "2026-11-27T12:41:16+00:00")
KERNEL = {"available": True, "why": "bpftrace on tracepoint syscalls:sys_exit_accept4"}


def attached(accepts: list[int], available: bool = True) -> LatencyResult:
    """The run above, as its file holds it: `served` is the kernel's accepts, the replies' counts all zero."""
    hist = LatencyHistogram()
    for us in [270] * 990 + [6400] * 10:
        hist.add(us)
    pids = [3485, 3486, 3487, 3488]
    counts = {str(pid): n for pid, n in zip(pids, accepts, strict=True)} if available else {}
    return LatencyResult(
        server=ServerSpec(mode="attached", workers=4, port=18090, kind="attached", attach=(3484,), protocol="http"),
        load=ConcurrentLoad(connections=None, duration_s=4.0, concurrency=16, requests_per_connection=0, pool=True),
        environment=ENV,
        port=18090,
        histogram=hist,
        errors={},
        served=tuple(accepts) if available else (0, 0, 0, 0),
        counters=tuple(WorkerCounters(i, pid, None, None, None, None, 100, 1, 0.4) for i, pid in enumerate(pids)),
        drivers=(DriverStats(0, 8, 1000, 4.0, 1.0, 0.5),),
        wall_s=4.0,
        evidence={"accept_counts": {**KERNEL, "available": available, "counts": counts}},
        connections=(0, 0, 0, 0),
        held_at_end=(0, 0, 0, 0),
        pool=(16, 16),
    )


def text(parts: object, width: int = 200) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(Group(*parts) if isinstance(parts, list) else parts)
    return console.export_text()


def rows(said: str) -> dict[str, list[str]]:
    """The kept table's rows by worker index."""
    lines = said.split("kept connections per worker", 1)[1].splitlines()
    return {cells[0]: cells for line in lines if (cells := line.split()) and cells[0].isdigit()}


def test_the_kernel_accepts_are_the_connections_accepted_not_requests() -> None:
    said = text(kept_parts(attached([5, 0, 0, 11])))
    by_worker = rows(said)
    # worker, accepted, held at end, held peak, requests, its count, share, p50, p99
    assert by_worker["0"][:7] == ["0", "5", "-", "-", "-", "-", "31.2%"], by_worker
    assert by_worker["3"][:7] == ["3", "11", "-", "-", "-", "-", "68.8%"], by_worker
    assert "requests: Jain" not in said and "connections accepted: Jain 0.438 over 4 workers" in said, said
    assert "not known: the replies do not name a worker" in said, said


def test_the_served_table_says_its_counts_are_connections() -> None:
    said = text(latency_report(attached([5, 0, 0, 11])), width=400)
    assert "accepts counted by the kernel (bpftrace on tracepoint syscalls:sys_exit_accept4): the connections" in said


def test_without_the_kernel_counts_nothing_per_worker_is_claimed() -> None:
    said = text(kept_parts(attached([5, 0, 0, 11], available=False)))
    assert all(cells[1:6] == ["-"] * 5 for cells in rows(said).values()), said
    assert "Jain" not in said, said


def test_csv_and_the_model_read_the_same() -> None:
    result = attached([5, 0, 0, 11])
    lines = kept_csv([result.to_dict()]).splitlines()
    assert lines[1].split(",")[2:6] == ["5", "", "", ""], lines
    held = held_connections(result)
    assert held is not None and held.per_worker == (5, 0, 0, 11), held


def test_repeat_counts_the_kernel_accepts() -> None:
    runs = [attached([5, 0, 0, 11]), attached([0, 16, 0, 0])]
    said = text(kept_repeat_table({"attached": runs}))
    # each split on a line of its own (17d6fcd), the kernel's accepts largest first
    lines = said.splitlines()
    first = next(i for i, line in enumerate(lines) if "11 5 0 0: 1" in line)
    assert "16 0 0 0: 1" in lines[first + 1] and "1 of 2" in lines[first], said
    unknown = text(kept_repeat_table({"attached": [attached([5, 0, 0, 11], available=False)]}))
    row = next(line for line in unknown.splitlines() if line.strip().startswith("attached"))
    assert row.split()[1:5] == ["-", "-", "-", "0.27"], row


def test_nothing_served_has_no_fairness() -> None:
    """latency --target at nginx's 'hello, world' (no reply names a worker): 0 served, 'requests: Jain 1.000'."""
    nothing = replace(attached([0, 0, 0, 0]), evidence={}, histogram=LatencyHistogram())
    said = text(kept_parts(nothing))
    assert "Jain" not in said and "requests: none served" in said, said
    assert "Jain" not in text(kept_parts(attached([0, 0, 0, 0])))
    repeat = text(kept_repeat_table({"target": [nothing, nothing]}))
    assert "1.000" not in repeat, repeat


def test_a_merged_pool_says_it_is_the_files_pools_added() -> None:
    """merge of two 'latency --pool -c 6' files: 'pool: 12 of 12 connections opened ... before the load ran'
    under a headline of 6 concurrent."""
    files = [{"file": "m1.json", "started_at": None}, {"file": "m2.json", "started_at": None}]
    merged = replace(attached([5, 0, 0, 11]), pool=(12, 12), evidence={"merged_from": {"files": files}})
    said = text(kept_parts(merged))
    assert "pool: 12 of 12 connections opened and answered before the load ran (the pools of 2 merged files, " in said
    assert "(the pools of" not in text(kept_parts(attached([5, 0, 0, 11]))), said
