"""What a run counts per connection is named for what it is: the workers' sleeps (voluntary context
switches), not wakeups. A worker that finds the next connection already queued takes it without sleeping,
so six connections with wakeups 2/2/2 can show 5 sleeps (0.8 per connection): "woken per connection 0.8"
read as a connection served without waking anyone. The saved key keeps its name (old files load)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from accept_order.analysis import order
from accept_order.core.measures import ConnectionRecord, WorkerCounters
from accept_order.experiments.documents import render_document
from accept_order.experiments.herd.report import HERD_LEGEND
from accept_order.experiments.order.result import RunResult
from accept_order.render.workers import worker_legend

GOLDEN = Path(__file__).parent / "data" / "golden"


def text_of(renderable: object) -> str:
    console = Console(width=200, record=True, color_system=None)
    with console.capture() as capture:
        console.print(renderable)
    return capture.get()


def saved(name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    return data


def records(sequence: list[int]) -> list[ConnectionRecord]:
    return [
        ConnectionRecord(seq=i, worker=w, pid=100 + w, start_us=i * 10, latency_us=5) for i, w in enumerate(sequence)
    ]


def test_fewer_sleeps_than_wakeups_are_called_sleeps() -> None:
    counters = [WorkerCounters(i, 100 + i, wakeups=2, accepts=2, voluntary_switches=s) for i, s in enumerate((2, 2, 1))]
    v = order.verdict(records([0, 1, 2, 0, 1, 2]), 3, "fifo", "why", counters)
    assert v.woken_per_connection == 0.833  # 5 sleeps, 6 connections
    assert v.line().endswith("; sleeps (voluntary context switches) per connection 0.8")
    assert "woken" not in v.line()


def test_an_old_file_loads_and_says_sleeps() -> None:
    run = RunResult.from_dict(saved("run"))  # its verdict's key is still woken_per_connection: 0.833
    assert run.verdict.woken_per_connection == 0.833
    assert "sleeps (voluntary context switches) per connection 0.8" in run.verdict.line()


def test_compare_and_its_repeat_head_the_column_sleeps() -> None:
    compare = text_of(render_document("compare", saved("compare")))
    assert "sleeps/conn" in compare.splitlines()[2] and "woken" not in compare
    assert "sleeps/conn: the workers' voluntary context switches per served connection" in compare
    repeat = text_of(render_document("repeat", saved("repeat")))
    assert "sleeps/conn" in repeat and "woken" not in repeat


def test_the_legends_say_sleeps_are_not_wakeups() -> None:
    assert "sleeps: voluntary context switches (times the worker blocked)" in worker_legend()
    assert "kernel wakeups" not in worker_legend()
    # The herd table keeps "woken" only where a worker blocks only to wait for a connection.
    assert "woken: sleeps per served connection, where a worker blocks only to wait for one (else -)" in HERD_LEGEND
