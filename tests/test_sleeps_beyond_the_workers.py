"""Sleeps per connection are read as the workers one connection woke only where they can all have been wakeups.
Debian's Puma 5.6, 'run --server puma -m less-busy -w 1 -n 8 --work 2ms': its one worker's server thread slept
24 times, bpftrace's sched_switch saw 9 of them in select and 21 on a futex (Ruby's GVL, held by the pool thread
that worked; the rest before the run), and the verdict said 'thundering herd (3.0 workers woken per connection)'
of one worker; compare's 'puma less-busy' of 2 workers said 3.1 workers woken. One connection wakes each worker
at most once, and the run's edges add at most one sleep a worker; one worker is no herd."""

from __future__ import annotations

import io

from rich.console import Console

from accept_order.analysis.herd import herd_row
from accept_order.analysis.order import verdict
from accept_order.core.measures import ConnectionRecord, Environment, WorkerCounters
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments.herd.report import herd_table
from accept_order.experiments.herd.result import HerdResult
from accept_order.experiments.order.result import RunResult
from accept_order.servers.registry import known_mode


def _records(workers: int, connections: int) -> list[ConnectionRecord]:
    return [ConnectionRecord(k, k % workers, 100 + k % workers, k * 1000, 500) for k in range(connections)]


def _counters(sleeps: list[int]) -> list[WorkerCounters]:
    return [WorkerCounters(i, 100 + i, None, None, None, None, s, 0, 0.01) for i, s in enumerate(sleeps)]


def _verdict(sleeps: list[int], connections: int = 8):  # type: ignore[no-untyped-def]
    return verdict(_records(len(sleeps), connections), len(sleeps), None, "why", _counters(sleeps))


def test_one_worker_is_no_herd() -> None:
    """Puma's one worker with 24 sleeps in 8 connections (the run above): no herd, no count of workers woken."""
    v = _verdict([24])
    assert "herd" not in v.pattern and "woken" not in v.line(), v.line()
    assert v.woken_per_connection is None
    assert _verdict([12]).woken_per_connection is None  # 1.5 a connection: one worker still wakes once
    assert _verdict([8]).woken_per_connection == 1.0  # one sleep a connection: its wakeups, said


def test_more_sleeps_than_workers_to_wake() -> None:
    """compare's Puma less-busy of 2 workers: 9 and 16 sleeps in 8 connections (3.1 a connection)."""
    v = _verdict([9, 16])
    assert "thundering herd" not in v.pattern and v.woken_per_connection is None, v.line()


def test_a_herd_within_the_workers_is_still_said() -> None:
    """Every worker once per connection, and one first wait each at the run's edge: a herd of 2 and of 32."""
    assert _verdict([8, 8]).pattern.startswith("thundering herd (2.0 workers woken per connection)")
    assert _verdict([9, 9]).woken_per_connection == 2.25  # 18 sleeps: 16 wakeups and each worker's first wait
    v = _verdict([41] * 32, connections=40)  # 'herd -w 32 -n 40' of the built-in poll counted 1,280 of 1,312
    assert v.woken_per_connection == 32.8 and v.pattern.startswith("thundering herd (32.0 workers woken"), v.pattern


def test_a_few_sleeps_besides_keep_the_herd() -> None:
    """'run -m poll -w 2 -n 1000' (the built-in workers, load 3) slept 1,010 and 1,004 times, 12 past every worker
    once a connection and a first wait each, and its verdict lost 'thundering herd', its workers woken to find
    nothing 159 and 279 times: 12 of 24 such runs of poll, select and epoll-herd at 2 and 4 workers did. A few sleeps
    besides are read as wakeups still; a herd's sentence names no more workers woken than there are."""
    v = _verdict([1010, 1004], connections=1000)
    assert v.pattern.startswith("thundering herd (2.0 workers woken per connection)"), v.pattern
    assert v.woken_per_connection == 2.014  # the sleeps as measured
    v = _verdict([1013, 1012, 1013, 1013], connections=1000)  # 'run -m epoll-herd -w 4 -n 1000': 4,051
    assert v.pattern.startswith("thundering herd (4.0 workers woken per connection)"), v.pattern


def test_herd_table_says_not_measured() -> None:
    """The herd command's row of such a run says its sleeps are not wakeups, not 'herd: wakes ~3 of 1'."""
    env = Environment("Linux", "6.x", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")
    records = tuple(_records(1, 8))
    counters = tuple(_counters([24]))
    v = verdict(records, 1, None, "why", counters)
    run = RunResult(
        ServerSpec(kind="puma", mode="less-busy", workers=1), SequentialLoad(connections=8), env, 5000, records,
        counters, v,
    )  # fmt: skip
    row = herd_row(run, known_mode("puma", "less-busy"))
    assert row.verdict() == "not measured: its workers sleep for more than connections (sleeps are not wakeups)"
    console = Console(width=250, record=True, file=io.StringIO())
    console.print(herd_table(HerdResult(1, 8, 0, 511, (run,))))
    assert "wakes ~" not in console.export_text()


def test_pumas_legend_says_its_sleeps_are_not_only_wakeups() -> None:
    """The per-worker table's legend said a Puma worker's sleeps were 'its wakeups'; the futex sleeps above are not."""
    from accept_order.servers.registry import server_kind

    sleeps = server_kind("puma").sleeps or ""
    assert sleeps.startswith("each worker's server thread alone, the one in select") and "Ruby's lock" in sleeps
