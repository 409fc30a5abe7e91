"""The latency model leaves out the workers that used no CPU where no worker's served count is known.

`latency --attach PID -p PORT -c 8 --duration 3s` of a 2-worker `serve -m io-uring --work 1ms` (2 vCPUs, load 4; the
file is that run's): the kernel's accept trace sees nothing of io_uring's accepts, so no worker's count is known, and
the model queued the run at both workers, p50 4.15 ms against 8.92 measured, then blamed the load generator and the
other processes. The run's own counters say worker 1 used no CPU and never slept (it never woke: served none) and worker
0 2.68 s: one worker served all, as io_uring's first armed ring does."""

from __future__ import annotations

import dataclasses
import json
from io import StringIO
from pathlib import Path

from rich.console import Console

from accept_order.analysis.model_check import agrees
from accept_order.experiments.latency import model_check
from accept_order.experiments.latency.model_report import model_report
from accept_order.experiments.latency.result import LatencyResult

DATA = Path(__file__).parent / "data"


def _run(name: str) -> LatencyResult:
    return LatencyResult.from_dict(json.loads((DATA / name).read_text()))


def test_the_worker_that_used_no_cpu_is_left_out_of_the_model() -> None:
    run = _run("latency_attach_io_uring.json")
    assert sum(run.served) == 0 and [c.cpu_s == 0 for c in run.counters] == [False, True]  # the witness
    assert run.counters[1].voluntary_switches == 0
    model = model_check.predict(run)
    assert model is not None and model.workers == 1
    assert agrees(run.histogram.percentile(50) / 1000, model.p50_ms)
    out = StringIO()
    Console(file=out, width=1000).print(*model_report([dataclasses.replace(run, model=model)]))
    said = " ".join(out.getvalue().split())
    assert (
        "no worker's served count is known: those that used CPU are the model's, the others served none (attached pid "
        "31107 1 of 2)" in said
    )
    assert "the client's CPUs reach" not in said


def test_a_run_whose_served_counts_are_known_keeps_every_worker() -> None:
    run = _run("latency_burst_epoll.json")
    assert model_check.working(run) is None
    model = model_check.predict(run)
    assert model is not None and model.workers == 2


def test_a_processs_threads_counted_as_servers_keep_their_count() -> None:
    """One process whose threads the model counts (HAProxy's nbthread): its one counter is not one per server."""
    run = _run("latency_attach_io_uring.json")
    one = dataclasses.replace(run, counters=run.counters[:1], server=run.server.replace(workers=2))
    assert model_check.working(one) is None
