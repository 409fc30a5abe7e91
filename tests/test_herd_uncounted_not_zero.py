"""herd --server puma showed 'wakeups 0, acc 0, empty 0, acc/wakeup 0.00 / 0' beside 'herd: wakes ~4 of 4' (and
gunicorn the same zeros): a launched server's workers count none of these (only this tool's own workers do), and a
0 read as 'never woken, never accepted'. What was not counted is '-', as the other columns say it."""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from accept_order.analysis.herd import herd_row
from accept_order.core.measures import ConnectionRecord, Environment, Verdict, WorkerCounters
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments.herd.report import herd_table
from accept_order.experiments.herd.result import HerdResult
from accept_order.experiments.order.result import RunResult
from accept_order.servers.registry import known_mode


def _run(counted: bool) -> RunResult:
    counts = 5 if counted else None
    counters = tuple(
        WorkerCounters(i, 100 + i, counts, counts, 0 if counted else None, 1 if counted else None, 20, 1, 0.01, (0,))
        for i in range(4)
    )
    env = Environment("Linux", "6.x", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")
    server = ServerSpec(kind="puma", mode="cluster", workers=4)
    records = tuple(ConnectionRecord(k, k % 4, 100, k * 10, 5) for k in range(20))
    verdict = Verdict("p", None, 0, 0, "why", 1.0, 1.0, True, 4.0)
    return RunResult(server, SequentialLoad(connections=20), env, 5000, records, counters, verdict)


def _line(counted: bool) -> str:
    console = Console(width=250, record=True, file=io.StringIO())
    console.print(herd_table(HerdResult(4, 20, 0, 511, (_run(counted),))))
    return next(line for line in console.export_text().splitlines() if line.lstrip().startswith("cluster"))


def test_counts_a_server_does_not_keep_are_not_zeros() -> None:
    row = herd_row(_run(False), known_mode("puma", "cluster"))
    assert (row.wakeups, row.accepts, row.empty, row.max_batch, row.accepts_per_wakeup) == (None,) * 5
    cells = _line(False).split()
    assert cells[1:5] == ["-", "-", "-", "-"], cells
    assert "herd: wakes ~4 of 4" in _line(False)


def test_counted_ones_stay_numbers() -> None:
    row = herd_row(_run(True), known_mode("puma", "cluster"))
    assert (row.wakeups, row.accepts, row.empty, row.max_batch) == (20, 20, 0, 1)
    assert _line(True).split()[1:6] == ["20", "20", "0", "1.00", "/"]
    assert dataclasses.replace(row, wakeups=0).accepts_per_wakeup == 0.0
