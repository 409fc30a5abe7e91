"""Latency runs: plan validation, an end-to-end run in every mode, the accepts-per-wakeup cap (from the
workers' own counters), the tail verdict, JSON round trips and the renderers."""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import pytest
from conftest import assert_one_error_line, run_cli
from rich.console import Console

from accept_order import api
from accept_order.analysis.tails import tail_verdict
from accept_order.cli.latency import latency as latency_command
from accept_order.cli.specs import server_spec
from accept_order.cli.sweep import sweep as sweep_command
from accept_order.cli.types import parse_duration
from accept_order.core.cpus import allowed_cpus
from accept_order.core.errors import PlanError, WorkerError
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec, open_file_limit, pinned, sized
from accept_order.experiments import documents, lifecycle
from accept_order.experiments.documents import render_document
from accept_order.experiments.latency import api as latency_api
from accept_order.experiments.latency.compare_report import compare_lines
from accept_order.experiments.latency.report import latency_report
from accept_order.experiments.latency.result import LatencyResult
from accept_order.experiments.latency.sweep_report import sweep_lines
from accept_order.probes.evidence import EvidenceCapture
from accept_order.results import envelope
from accept_order.servers.modes import MODES, parse_modes
from accept_order.servers.worker import FAULT_ENV

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")
SUMMARY = re.compile(
    r"^(?P<title>.+) min:\d+\.\d\d avg:\d+\.\d\d med=\d+\.\d\d max:\d+\.\d\d dev:\d+\.\d\d count:(?P<n>\d+)$",
    re.M,
)


def text_of(renderable: object, width: int = 80) -> str:
    console = Console(width=width, record=True, color_system=None)
    with console.capture() as capture:
        console.print(renderable, crop=False)
    return capture.get()


Plan = tuple[ServerSpec, ConcurrentLoad]


def small(mode: str = "blocking", pin: bool = False, **overrides: Any) -> Plan:
    options: dict[str, Any] = {
        "mode": mode,
        "workers": 2,
        "connections": 200,
        "concurrency": 8,
        "driver_procs": 2,
        "work_us": 100,
    }
    options.update(overrides)
    server, load = api.split_options(options, ConcurrentLoad)
    return pinned(server, pin).validated(), load


def run_latency(plan: Plan) -> LatencyResult:
    return api.latency(*plan)


# -- parsing and validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10.0), ("500ms", 0.5), ("2m", 120.0), ("1.5h", 5400.0), (" 250 us", 0.00025)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "10x", "-1s", "0s", "0", "1e3s", "ten seconds", "1.2.3s"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_a_bare_number_is_refused_naming_the_unit_to_add() -> None:
    with pytest.raises(ValueError, match="'30' needs a unit: write 30s for what it used to mean"):
        parse_duration("30")
    assert parse_duration("30", bare="ms") == pytest.approx(0.03)  # an old spelling that names its unit (--gap-ms)
    assert parse_duration("0", zero=True) == 0.0


def test_plan_defaults() -> None:
    load = ConcurrentLoad().validated()
    assert (load.connections, load.duration_s, load.concurrency, load.driver_procs) == (100_000, None, 200, 2)
    # A closed loop never waits for idle workers to settle between connections: that is for the
    # ordering experiments (SequentialLoad), not a load.
    assert not hasattr(load, "settle")
    (workers,) = [p for p in latency_command.params if p.name == "workers"]
    assert workers.default is None
    server = server_spec({"workers": workers.default})
    assert server.workers == len(allowed_cpus())  # one per CPU
    assert server.cpus == ()
    assert server.mode == ServerSpec().mode == "epoll"  # the API's default, and now the CLI's too


def test_pin_spreads_workers_over_the_allowed_cpus() -> None:
    assert pinned(ServerSpec(), True).cpus == tuple(allowed_cpus())
    assert pinned(ServerSpec(), False).cpus == ()
    first = allowed_cpus()[0]
    assert pinned(ServerSpec(cpus=(first,)), True).cpus == (first,)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"connections": 5, "duration_s": 1.0}, "not both"),
        ({"connections": None}, "give --connections or --duration"),
        ({"connections": 0}, "--connections must be between 1"),
        ({"connections": -3}, "--connections must be between 1"),
        ({"connections": None, "duration_s": 0.0}, "--duration must be between 0.001"),
        ({"connections": None, "duration_s": -2.0}, "--duration must be between 0.001"),
        ({"concurrency": 0}, "--concurrency must be between 1"),
        ({"concurrency": -1}, "--concurrency must be between 1"),
        ({"concurrency": 2 * (open_file_limit() - 32) + 1}, "open-file limit"),  # 2 drivers, 32 files each
        ({"concurrency": open_file_limit(), "driver_procs": 1}, "open-file limit"),
        ({"driver_procs": 0}, "--driver-procs must be between 1"),
        ({"workers": 0}, "--workers must be between 1"),
        ({"work_us": -1}, "--work-us must be between 0"),
        ({"cpus": (4096,)}, "--cpus: CPU 4096 not available here"),
        ({"mode": "nope"}, "unknown mode"),
    ],
)
def test_bad_plans_fail_before_anything_starts(options: dict[str, Any], message: str) -> None:
    with pytest.raises(PlanError, match=re.escape(message)):
        api.split_options(options, ConcurrentLoad)


def test_parse_batches_and_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_run(*args: object, **kwargs: object) -> LatencyResult:
        raise AssertionError("a run started")

    monkeypatch.setattr(latency_api, "run_latency", no_run)
    (batches,) = [p for p in sweep_command.params if p.name == "batches"]
    assert batches.type_cast_value(click.Context(sweep_command), "1,4,32,0") == [1, 4, 32, 0]
    for bad in ("", "1,x", "-1", "1,,-2"):
        assert_one_error_line(run_cli(["sweep", "--accept-batch", bad]), 2, "'--accept-batch'")
    assert parse_modes("blocking, reuseport") == ["blocking", "reuseport"]
    with pytest.raises(PlanError, match="unknown mode"):
        parse_modes("blocking,nope")
    with pytest.raises(PlanError, match="none given"):
        parse_modes(" , ")


# -- end to end, every mode ----------------------------------------------------------------------


@LINUX_ONLY
@pytest.mark.parametrize("mode", list(MODES))
def test_small_run_in_every_mode(mode: str) -> None:
    if MODES[mode].unavailable():
        pytest.skip(MODES[mode].unavailable() or "")
    result = run_latency(small(mode))
    assert (result.ok, result.failed, result.errors) == (200, 0, {})
    assert sum(result.served) == 200 and len(result.served) == 2
    # The workers' own counters agree with what the clients saw.
    assert sum(c.accepts for c in result.counters) == 200
    assert [c.accepts for c in result.counters] == list(result.served)
    assert sum(d.requests for d in result.drivers) == 200
    assert result.throughput > 0 and result.wall_s > 0
    # Each request took at least the handler's busy loop.
    assert result.histogram.min_us is not None and result.histogram.min_us >= 100
    text = text_of(latency_report(result), width=120)  # piped: the seed's line whole (at 80 it is folded)
    match = SUMMARY.search(text)
    assert match and match["title"] == f"Duration in ms ({mode})" and match["n"] == "200"
    assert " value |" + "-" * 50 + " count" in text
    for pid in (c.pid for c in result.counters):
        assert f"pid {pid}'s current affinity list: " in text


@LINUX_ONLY
def test_pinned_workers_report_their_cpu() -> None:
    cpus = allowed_cpus()
    result = run_latency(small(pin=True, workers=len(cpus), connections=40))
    assert [c.affinity for c in result.counters] == [(cpu,) for cpu in cpus]


@LINUX_ONLY
def test_duration_run_counts_every_request() -> None:
    result = run_latency(small(connections=None, duration_s=0.3))
    assert result.ok > 0 and result.failed == 0
    assert result.requests == sum(d.requests for d in result.drivers)
    assert sum(c.accepts for c in result.counters) == result.ok


@LINUX_ONLY
def test_work_iters_is_timed_before_the_run() -> None:
    result = run_latency(small(work_us=0, work_iters=20_000, connections=40))
    assert result.work_estimate_us is not None and result.work_estimate_us > 0
    assert "20000 loop iterations ≈" in text_of(latency_report(result), width=200)


@LINUX_ONLY
def test_a_worker_that_dies_ends_the_run_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "die-on-accept:0")
    with pytest.raises(WorkerError, match="worker 0"):
        run_latency(small("blocking", connections=100))


@LINUX_ONLY
def test_workers_start_in_the_single_serving_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers start in one place (the lifecycle, experiments/lifecycle.py), and whatever its evidence capture records
    lands in the result: the place for a kernel capture."""
    original_target = lifecycle.make_target
    started: list[ServerSpec] = []
    captured: list[list[int]] = []

    def counting(spec: ServerSpec, stamps: bool = False) -> Any:
        started.append(spec)
        return original_target(spec, stamps=stamps)

    class Capturing(EvidenceCapture):
        def after(self, port: int = 0, pids: Sequence[int] = ()) -> dict[str, Any]:
            captured.append(list(pids))
            return {**super().after(port, pids), "hook": {"pids": list(pids)}}

    monkeypatch.setattr(lifecycle, "make_target", counting)
    monkeypatch.setattr(lifecycle, "EvidenceCapture", Capturing)
    server, load = small(connections=20)
    result = run_latency((server, load))
    assert started == [sized(server, load.concurrency)] and len(captured) == 1  # sized: for launched servers
    assert result.evidence["hook"] == {"pids": [c.pid for c in result.counters]}


# -- the accepts-per-wakeup cap ------------------------------------------------------------------


def busy_single_worker(batch: int) -> Plan:
    # One worker that burns 2 ms per request while 8 clients keep connecting: connections pile up in
    # the accept queue, so every wakeup finds several waiting and only the cap limits the batch.
    return small("epoll", workers=1, concurrency=8, connections=64, work_us=2000, accept_batch=batch)


@LINUX_ONLY
@pytest.mark.parametrize("cap", [1, 3])
def test_a_worker_never_accepts_more_than_the_cap_per_wakeup(cap: int) -> None:
    result = run_latency(busy_single_worker(cap))
    (worker,) = result.counters
    assert result.ok == 64 and worker.accepts == 64
    assert 1 <= worker.max_batch <= cap
    assert worker.wakeups - worker.empty >= 64 / cap  # so it needed at least this many wakeups


@LINUX_ONLY
def test_sweep_runs_one_latency_run_per_cap() -> None:
    results = api.sweep_accept_batch(*busy_single_worker(0), [2, 0])
    assert [r.server.accept_batch for r in results] == [2, 0]
    assert all(r.ok == 64 for r in results)
    capped, free = (r.counters[0] for r in results)
    assert capped.max_batch <= 2
    # Without a cap the worker drains the queue: with 8 clients and one busy worker, some wakeup finds
    # more than 2 connections waiting (the control that shows the cap is what limited the batches).
    assert free.max_batch > 2
    lines = sweep_lines(results)
    assert lines[0].split("|")[1:4] == ["   performance ", "  lat-avg ", " lat-stdev "]
    assert lines[2].startswith("2 limit  |") and lines[4].startswith("no limit |")
    assert results[0].title == "Duration in ms (epoll, accept-batch 2)"


# -- verdict, JSON and renderers on known data ---------------------------------------------------

ENV = Environment("Linux", "6.0", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")


def fake(mode: str, values_us: list[int], errors: dict[str, int] | None = None) -> LatencyResult:
    hist = LatencyHistogram()
    for us in values_us:
        hist.add(us)
    server = ServerSpec(mode=mode, workers=2).validated()
    load = ConcurrentLoad(connections=max(1, len(values_us)), concurrency=4).validated()
    return LatencyResult(
        server=server,
        load=load,
        environment=ENV,
        port=1234,
        histogram=hist,
        errors=errors or {},
        served=(len(values_us) - len(values_us) // 2, len(values_us) // 2),
        counters=(WorkerCounters(0, 100, 5, 5, 0, 2, affinity=(0,)), WorkerCounters(1, 101, 5, 5, 0, 1)),
        drivers=(DriverStats(0, 4, len(values_us), 1.0, 0.2, 0.1),),
        wall_s=2.0,
        title=f"Duration in ms ({mode})",
    )


TIGHT = [30_000] * 98 + [29_000, 31_000]  # the seed's shared queue: everything near 30 ms
WIDE = [2_000] * 25 + [30_000] * 50 + [60_000] * 24 + [140_000]  # reuseport: same-ish average, wide


def test_tail_verdict_names_the_tighter_tail_with_ratios() -> None:
    tight, wide = fake("blocking", TIGHT), fake("reuseport", WIDE)
    verdict = tail_verdict([wide, tight])
    assert (verdict.tightest, verdict.kind) == ("blocking", "clear")
    r = verdict.ratios["reuseport"]
    assert r["p99"] == 60_000 / 30_000 and r["p99.9"] == 140_000 / 31_000
    assert r["dev"] == pytest.approx(wide.histogram.stdev_us / tight.histogram.stdev_us)
    assert r["avg"] == pytest.approx(wide.histogram.mean_us / tight.histogram.mean_us)
    # p50 (30 vs 30 ms) and average (30.0 vs 31.3 ms) are within 10%: said so, not counted as lower.
    assert verdict.text == (
        "blocking had the tightest tail of these runs: its p99 (30.00 vs 60.00 ms, 0.50×), p99.9 (31.00 vs 140.00 "
        "ms, 0.22×) and deviation (0.14 vs 23.05 ms, 0.01×) are lower than reuseport's, p50 and average within 10% "
        "(blocking 30.00, 30.00 ms; reuseport 30.00, 31.30 ms)"
    )


def test_tail_verdict_without_a_clear_difference() -> None:
    verdict = tail_verdict([fake("blocking", TIGHT), fake("epoll", TIGHT)])
    assert (verdict.tightest, verdict.kind) == (None, "tight")
    assert verdict.text.startswith("no clear difference in the tails (all within 10%)")
    assert tail_verdict([fake("blocking", TIGHT)]).tightest is None
    assert tail_verdict([fake("blocking", TIGHT), fake("epoll", [])]).tightest is None


def test_result_json_round_trip(tmp_path: Path) -> None:
    result = fake("reuseport", WIDE, errors={"ECONNRESET": 2, "timeout": 1})
    result = dataclasses.replace(result, evidence={"netstat": {"TcpExtListenOverflows": 0}})
    path = tmp_path / "latency.json"
    envelope.save(path, "latency", result.to_dict())
    kind, doc = documents.load(path)
    assert kind == "latency"
    back = LatencyResult.from_dict(doc)
    assert back == result
    assert doc["summary"]["p99_ms"] == 60.0 and doc["summary"]["count"] == 100
    text = text_of(render_document(kind, doc))
    assert "3 of 103 connections failed" in text
    assert "2 × ECONNRESET (Connection reset by peer)" in text and "1 × timeout" in text


def test_report_keeps_mmhistogram_lines_whole_when_they_fit_and_folds_them_at_a_space_when_not() -> None:
    line = "Duration in ms (reuseport) min:2.00 avg:31.30 med=30.00 max:140.00 dev:23.05 count:100"
    assert line in text_of(latency_report(fake("reuseport", WIDE)), width=120).splitlines()  # piped: the seed's
    text = text_of(latency_report(fake("reuseport", WIDE)), width=80)
    lines = text.splitlines()
    assert len(line) > 80 and line not in lines
    at = lines.index("Duration in ms (reuseport) min:2.00 avg:31.30 med=30.00 max:140.00 dev:23.05")
    assert lines[at + 1] == "  count:100"  # every figure whole, on an 80-column terminal
    # As mmhistogram prints it: bucket L holds (L, 2L] ms, so exactly 2 ms is in bucket 1 and 30 ms in
    # bucket 16; every bucket from 0 to the last non-empty one is shown.
    start = lines.index("Duration in ms (reuseport):")
    assert lines[start + 1 : start + 11] == [
        " value |" + "-" * 50 + " count",
        "     0 |" + " " * 50 + " 0",
        "     1 |" + f"{'*' * 25:>50} 25",
        "     2 |" + " " * 50 + " 0",
        "     4 |" + " " * 50 + " 0",
        "     8 |" + " " * 50 + " 0",
        "    16 |" + "*" * 50 + " 50",
        "    32 |" + f"{'*' * 24:>50} 24",
        "    64 |" + " " * 50 + " 0",
        "   128 |" + f"{'*':>50} 1",
    ]


def test_compare_and_sweep_documents_render(tmp_path: Path) -> None:
    runs = [fake("blocking", TIGHT), fake("reuseport", WIDE)]
    doc = {"runs": [r.to_dict() for r in runs], "skipped": {"epoll": "no EPOLLEXCLUSIVE"}}
    text = text_of(render_document("latency-compare", doc), width=100)
    assert "Duration in ms (blocking) min:29.00 avg:30.00 med=30.00 max:31.00 dev:0.14 count:100" in text
    assert "epoll: not available: no EPOLLEXCLUSIVE" in text
    assert "Verdict: blocking had the tightest tail of these runs" in text
    lines = compare_lines(runs)
    assert lines[0].split()[:9] == ["mode", "min", "avg", "med", "p90", "p99", "p99.9", "max", "dev"]
    row = ["blocking", "29.00", "30.00", "30.00", "30.00", "30.00", "31.00", "31.00", "0.14", "50", "0"]
    assert lines[2].split() == [*row, "50", "50"]  # req/s = 100 served / 2 s; served per worker 50 50
    sweep = render_document("sweep", {"runs": [r.to_dict() for r in runs]})
    assert "no limit |" in text_of(sweep, width=120)


@LINUX_ONLY
def test_compare_runs_each_mode_and_skips_the_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MODES["epoll"], "unavailable", lambda: "pretend")
    results, skipped = api.compare_latency(*small(connections=60), ["blocking", "epoll", "reuseport"])
    assert [r.mode for r in results] == ["blocking", "reuseport"]
    assert skipped == {"epoll": "pretend"}
    assert all(r.ok == 60 for r in results)
