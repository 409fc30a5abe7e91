"""Three fixes in the kept-connection client (loads/kept.py), found in review:

1. A pool's fill is timed apart from its load: a blocking pool beyond its workers waited out its timeout
   while filling, and that wait counted in the run's wall time and rates (wall 4.02 s for a 2 s load).
2. A driver stopped with nothing under way counts no failure, not `aborted: 0` (kept.py and drive_loop.py's
   stop path; generator.merge drops a 0 since d3e94da, the drivers no longer send one).
3. A worker's own count above its replies is explained where the client gave up on requests (timed out or
   aborted): a worker still answers one once it reads it (13,667 counted against 13,666 replies).

The witnesses: the client's own timeout (a fill that timed out lasted at least that long), the workers' own
counts, and figures made by hand for what the reports and files make of them."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import run_cli
from rich.console import Console, RenderableType

from accept_order.analysis.kept_counts import filled_in, own_count
from accept_order.core.finished import PUBLISHED
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.load_summary import LoadSummary
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.protocol import ABORTED, KEEP_LINE, LINE
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.core.waiting import wait_for
from accept_order.experiments.burst.report import burst_report
from accept_order.experiments.burst.result import BurstCell, BurstResult, BurstRun
from accept_order.experiments.latency.kept_report import kept_lines
from accept_order.experiments.latency.report import interrupted_note
from accept_order.experiments.latency.result import LATENCY_SHAPE, LatencyResult
from accept_order.experiments.ramp.report import ramp_report
from accept_order.experiments.ramp.result import RampResult, RampStep
from accept_order.experiments.session import run_latency
from accept_order.loads.drive_loop import DriverConfig, _drive
from accept_order.loads.generator import merge
from accept_order.loads.kept import drive_kept
from accept_order.results.envelope import save
from accept_order.results.schema import SchemaError
from accept_order.servers.pool import WorkerPool

ENV = Environment("Linux", "6.18", "x86_64", 2, 65536, "3.11", "host", "2026-11-27T00:00:00+00:00")
TIMEOUT_S = 1.5  # the fill's wait for the connection no blocking worker takes
DURATION_S = 0.3  # the load's, after the fill


def text(renderable: RenderableType) -> str:
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(renderable)
    return out.getvalue()


# 1. A pool's fill timed apart from its load


def test_a_pools_fill_that_waits_out_its_timeout_is_not_in_the_loads_time(tmp_path: Path) -> None:
    """blocking, 2 workers, a pool of 4 over 2 drivers: the first driver's 2 connections are each held by a
    worker, the second driver's first waits in the queue until its timeout, and the fill ends there. The
    fill lasted at least that timeout (the client's own clock); the load's wall time, and every driver's, is
    its 0.3 s, not the fill's 1.5 s besides (before: wall >= fill + duration), and its req/s divide by it."""
    load = ConcurrentLoad(
        connections=None,
        duration_s=DURATION_S,
        concurrency=4,
        driver_procs=2,
        requests_per_connection=0,
        pool=True,
        timeout_s=TIMEOUT_S,
    )
    result = run_latency(ServerSpec(mode="blocking", workers=2), load)
    assert result.pool == (2, 4) and result.errors == {"timeout": 1}, (result.pool, result.errors)
    assert result.pool_fill_s is not None and result.pool_fill_s >= TIMEOUT_S
    assert DURATION_S <= result.wall_s < result.pool_fill_s, (result.wall_s, result.pool_fill_s)
    # the driver whose share opened nothing carried no load: its figures are its whole life's (the fill),
    # not a window of none (which read 84% CPU here); the other's are the load's
    idle, busy = sorted(result.drivers, key=lambda d: d.requests)
    assert idle.requests == 1 and idle.wall_s >= TIMEOUT_S
    assert DURATION_S <= busy.wall_s < result.pool_fill_s
    doc = json.loads(json.dumps(result.to_dict()))
    LATENCY_SHAPE.check(doc, "run")
    assert doc["pool"]["fill_s"] == result.pool_fill_s
    assert LatencyResult.from_dict(doc).pool_fill_s == result.pool_fill_s
    said = "\n".join(str(t) for t in kept_lines(result))
    assert re.search(r"pool: 2 of 4 connections opened and answered in \d+\.\d\d s before the load ran", said), said
    # a worker may answer the request that timed out once a held connection closes: then said why (fix 3)
    own = [c.requests for c in sorted(result.counters, key=lambda c: c.index)]
    if own != list(result.served):
        assert "within the 1 request the client gave up on (1 timed out)" in said, said


def _report(index: int, start: float, end: float, fill_s: float, opened: int, ran: bool = True) -> dict[str, Any]:
    stats = DriverStats(index, 2, 10, end - start, 0.1).to_dict()
    return {
        "counts": [(100, 10)],
        "worker_counts": {0: [(100, 10)]},
        "errors": {},
        "served": {0: 10},
        "connections": {0: opened},
        "held": {0: opened},
        "start": start,
        "end": end,
        "ran": ran,
        "stats": stats,
        "pool": {"planned": 2, "opened": opened, "fill_s": fill_s},
    }


def test_the_drivers_reports_make_the_loads_time_from_the_filled_pool() -> None:
    """The load's wall time spans the drivers that ran a load, from when each saw the pool filled; a driver
    that carried none (stopped while filling, or its share opened nothing) adds none of its time; the fill is
    the longest any driver waited for it (they start together and fill in turns). Reports without `ran` (the
    one-request loop's) all count."""
    merged = merge([_report(0, 10.0, 12.0, 3.0, 2), _report(1, 7.0, 12.5, 3.1, 0, ran=False)])
    assert merged.wall_s == 2.0 and merged.pool == (2, 4) and merged.pool_fill_s == 3.1
    none_ran = merge([_report(0, 10.0, 10.2, 0.5, 1, ran=False)])
    assert none_ran.wall_s == 0.0 and none_ran.throughput == 0.0
    old = {k: v for k, v in _report(0, 1.0, 3.0, 0.0, 2).items() if k not in ("ran", "pool")}
    assert merge([old]).wall_s == 2.0 and merge([old]).pool_fill_s is None


def _summary(fill: float | None, wall: float = 2.0) -> LoadSummary:
    h = LatencyHistogram()
    h.add(100, 10)
    return LoadSummary(h, {}, (10,), wall, connections=(2,), held=(2,), pool=(2, 2), pool_fill_s=fill)


def test_a_pools_fill_time_is_saved_added_and_read_back_and_older_files_load(tmp_path: Path) -> None:
    """Saved in `pool` beside opened and planned; two loads one after the other add their fills, two at once
    keep the longer; a file without fill_s (before it was timed apart) loads and says no time."""
    one = _summary(0.25)
    assert one.to_dict()["pool"] == {"opened": 2, "planned": 2, "fill_s": 0.25}
    assert LoadSummary.from_dict(one.to_dict()).pool_fill_s == 0.25
    assert one.extend(_summary(0.5)).pool_fill_s == 0.75
    assert one.extend(_summary(0.5), concurrent=True).pool_fill_s == 0.5
    assert one.extend(_summary(None)).pool_fill_s == 0.25
    assert _summary(None).extend(_summary(None)).pool_fill_s is None
    assert _summary(None).to_dict()["pool"] == {"opened": 2, "planned": 2}
    assert filled_in(None) == "" and filled_in(2.0093) == " in 2.01 s" and filled_in(0.0034) == " in 3.4 ms"

    result = _latency(fill=0.0034)
    doc = json.loads(json.dumps(result.to_dict()))
    with pytest.raises(SchemaError):
        LATENCY_SHAPE.check(doc | {"pool": {"opened": 2, "planned": 2, "fill_s": "soon"}}, "run")
    older = doc | {"pool": {"opened": 2, "planned": 2}}
    LATENCY_SHAPE.check(older, "run")
    assert LatencyResult.from_dict(older).pool_fill_s is None
    save(tmp_path / "new.json", "latency", doc)
    path = tmp_path / "old.json"
    save(path, "latency", older)
    shown = run_cli(["show", str(tmp_path / "new.json")])
    assert shown.exit_code == 0, shown.output
    assert "pool: 2 of 2 connections opened and answered in 3.4 ms before the load ran" in shown.stdout
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "pool: 2 of 2 connections opened and answered before the load ran" in shown.stdout
    # stopped by a signal while the pool filled: no load time, and the fill's said beside it
    stopped = interrupted_note([dataclasses.replace(_latency(fill=3.1), interrupted=True, wall_s=0.0)])
    assert "stopped after 0.00 s of load (its pool took 3.10 s to fill before)" in str(stopped[0])


def _step(fill: float | None, errors: dict[str, int] | None = None, served: tuple[int, ...] = (5, 5)) -> RampStep:
    return RampStep(
        "concurrency", 4, 1.0, served, dict(errors or {}), 100, 200, 300, 400, {}, {}, (), (0.1, 0.1), 0.2,
        connections=(2, 2), pool=(4, 4), pool_fill_s=fill,
    )  # fmt: skip


def test_a_ramp_steps_pool_says_its_fill_time_and_older_steps_load() -> None:
    step = _step(1.25)
    data = json.loads(json.dumps(step.to_dict()))
    assert data["pool"] == {"opened": 4, "planned": 4, "fill_s": 1.25} and "pool_fill_s" not in data
    assert RampStep.from_dict(data) == step
    older = data | {"pool": {"opened": 4, "planned": 4}}
    assert RampStep.from_dict(older) == _step(None)
    server = ServerSpec(mode="epoll", workers=2).validated()
    plan = {"concurrencies": [4], "pool": True, "requests_per_connection": 0}
    said = text(ramp_report(RampResult(server, plan, (step,), ENV)))
    assert "pool: 4 of 4 opened and answered in 1.25 s before the step's requests" in said
    said = text(ramp_report(RampResult(server, plan, (_step(None),), ENV)))
    assert "pool: 4 of 4 opened and answered before the step's requests" in said


# 2. No failure counted 0 at the source


class _Flag:
    """The shared stop flag and the pool's turn, as a thread sees them (the generator's are shared memory)."""

    def __init__(self) -> None:
        self.value = 0


def _stopped_driver(
    drive: Callable[[], dict[str, Any]], progress: list[int], stop: _Flag, when: Callable[[], bool]
) -> dict[str, Any]:
    """Run a driver's loop in a thread, set its stop flag once `when` holds, and return its report."""
    out: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: out.update(drive()), daemon=True)
    thread.start()
    try:
        assert wait_for(when, 10.0), "the driver never got there"
    finally:
        stop.value = 1
        thread.join(10.0)
    assert not thread.is_alive() and out, "the driver did not stop"
    return out


def _config(pool: WorkerPool | tuple[str, int], protocol: Any, per: int, rate: float | None) -> DriverConfig:
    address = pool if isinstance(pool, tuple) else pool.address
    attribution = SimpleNamespace(from_reply=lambda _: 0, holds_socket=False)
    return DriverConfig(0, address, attribution, protocol, None, None, 1, 30.0, rate, (), per)  # type: ignore[arg-type]


@pytest.mark.parametrize("kept", [True, False], ids=["kept", "one-request"])
def test_a_driver_stopped_between_requests_counts_no_failure(kept: bool) -> None:
    """An open loop at one request per 10 s: stopped once its first is answered, nothing is under way, and
    its report holds no failure at all (it held {'aborted': 0})."""
    progress = [0] * PUBLISHED
    stop = _Flag()
    with WorkerPool(ServerSpec(mode="epoll", workers=2, keepalive=kept)) as pool:
        if kept:
            cfg = _config(pool, KEEP_LINE, 0, 0.1)
            drive = lambda: drive_kept(cfg, progress, stop, _Flag(), lambda: None, 0.05)  # noqa: E731
        else:
            cfg = _config(pool, LINE, 1, 0.1)
            drive = lambda: _drive(cfg, progress, stop)  # noqa: E731
        report = _stopped_driver(drive, progress, stop, lambda: progress[1] >= 1)
    assert report["errors"] == {}, report["errors"]
    assert dict(report["served"]) == {0: 1} and DriverStats.from_dict(report["stats"]).requests == 1


@pytest.mark.parametrize("kept", [True, False], ids=["kept", "one-request"])
def test_a_driver_stopped_with_a_request_under_way_counts_it_aborted(kept: bool) -> None:
    """A listener nobody accepts from: the connection is made (the kernel's handshake) and its request sent,
    never answered; stopped, the driver counts that one request aborted."""
    listener = socket.socket()
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        progress = [0] * PUBLISHED
        stop = _Flag()
        address = listener.getsockname()
        if kept:
            cfg = _config(address, KEEP_LINE, 0, None)
            drive = lambda: drive_kept(cfg, progress, stop, _Flag(), lambda: None, 0.05)  # noqa: E731
        else:
            cfg = _config(address, LINE, 1, None)
            drive = lambda: _drive(cfg, progress, stop)  # noqa: E731
        report = _stopped_driver(drive, progress, stop, lambda: True)
    finally:
        listener.close()
    assert report["errors"] == {ABORTED: 1}, report["errors"]


# 3. A worker's own count above its replies, explained where the client gave up


def _latency(
    own: tuple[int, int] = (10, 10), errors: dict[str, int] | None = None, fill: float | None = None
) -> LatencyResult:
    h = LatencyHistogram()
    h.add(100, 20)
    counters = tuple(WorkerCounters(i, 1000 + i, accepts=1, requests=own[i], held_peak=1) for i in range(2))
    return LatencyResult(
        server=ServerSpec(mode="epoll", workers=2).validated(),
        load=ConcurrentLoad(
            connections=None, duration_s=2.0, concurrency=2, requests_per_connection=0, pool=True
        ).validated(),
        environment=ENV,
        port=8080,
        histogram=h,
        errors=dict(errors or {}),
        served=(10, 10),
        counters=counters,
        drivers=(DriverStats(0, 2, 20, 2.0, 0.5, 0.0),),
        wall_s=2.0,
        connections=(1, 1),
        held_at_end=(1, 1),
        worker_histograms=(h, LatencyHistogram()),
        pool=(2, 2),
        pool_fill_s=fill,
    )


def _said(result: LatencyResult) -> str:
    return "\n".join(str(t) for t in kept_lines(result))


def test_a_worker_that_answered_a_request_the_client_gave_up_on_is_explained() -> None:
    """blocking's 13,667 against 13,666: the one more is within the one request that timed out. Two more
    against one timed out and one aborted, too; more than the client gave up on, or a worker counting fewer,
    is not put down to it (the generic words, in yellow)."""
    said = _said(_latency(own=(11, 10), errors={"timeout": 1}))
    assert "its count differs from the replies (worker 0: 1 more): the 1 more are within the 1 request the " in said
    assert "client gave up on (1 timed out)" in said
    said = _said(_latency(own=(11, 11), errors={"timeout": 1, ABORTED: 1}))
    assert "(worker 0: 1 more; worker 1: 1 more): the 2 more are within the 2 requests the client gave up on " in said
    assert "(1 timed out, 1 under way when the run was stopped)" in said
    for own, errors in (((12, 10), {"timeout": 1}), ((11, 9), {"timeout": 2}), ((11, 10), {"ECONNRESET": 1})):
        lines = kept_lines(_latency(own=own, errors=errors))
        line = next(t for t in lines if str(t).startswith("its count differs"))
        # a worker counting fewer than its replies: not a reply lost on the way (that makes more), said as such
        why = "a worker counted fewer than the replies naming it" if own[1] < 10 else "counts on the worker's side only"
        assert why in str(line) and line.style == "yellow"
    assert "its count differs" not in _said(_latency(errors={"timeout": 3}))


def test_the_ramp_and_burst_lines_of_the_workers_own_count_say_why() -> None:
    """ramp's and burst's 'the workers' own count' lines: a surplus within the client's timed-out requests is
    explained there too, summed over the steps and the bursts."""
    server = ServerSpec(mode="epoll", workers=2).validated()
    steps = (_step(None), _step(None, {"timeout": 1}))
    said = text(ramp_report(RampResult(server, {"concurrencies": [4, 4]}, steps, ENV, worker_requests=(11, 10))))
    assert "the workers' own count: 11 10; the replies say 10 10 (the 1 more are within the 1 request" in said
    said = text(ramp_report(RampResult(server, {"concurrencies": [4]}, (_step(None),), ENV, worker_requests=(11, 10))))
    assert "(a request whose reply was lost counts on the worker's side only)" in said
    cell = BurstCell(4, 0.1, (5, 5), {}, {}, (), requests_per_connection=5, connections=(2, 2))
    timed_out = dataclasses.replace(cell, errors={"timeout": 2})
    run = BurstRun(server, (cell, timed_out), ENV, worker_requests=(11, 11))
    said = text(burst_report(BurstResult((run,))))
    assert "the workers' own count: 11 11; the replies say 10 10 (the 2 more are within the 2 requests" in said
    assert own_count((11, 11), (10, 10), {"timeout": 2}).explained
    assert not own_count((11, 11), (10, 10), {"timeout": 1}).explained
