"""Tests for the herd comparison: who wakes one worker, who wakes them all (live, on loopback), the
HerdResult record, its renderer and the `herd` command."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli
from rich.console import Console

from accept_order import api
from accept_order.analysis.herd import HERD_THRESHOLD, HerdRow, herd_row, nearest_rank
from accept_order.core.errors import PlanError
from accept_order.core.measures import ConnectionRecord, Environment, Verdict, WorkerCounters
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import documents
from accept_order.experiments.documents import render_document
from accept_order.experiments.herd.report import herd_report, herd_table
from accept_order.experiments.herd.result import HerdResult
from accept_order.experiments.order import api as order_api
from accept_order.experiments.order.result import RunResult
from accept_order.experiments.session import run_sequential
from accept_order.results import envelope
from accept_order.servers.modes import MODES
from accept_order.servers.registry import known_mode

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")


def _row(run: RunResult) -> HerdRow:
    """The herd table's row of a run, its mode's prediction looked up as the herd experiment does."""
    return herd_row(run, known_mode(run.server.kind, run.server.mode))


def text_of(renderable: object) -> str:
    console = Console(width=240, record=True, color_system=None)
    with console.capture() as capture:
        console.print(renderable)
    return capture.get()


# ------------------------------------------------------------------------------------------------
# Live: 4 idle workers, sequential connections
# ------------------------------------------------------------------------------------------------

HERD = ("epoll-herd", "poll", "select")
ONE = ("blocking", "epoll")


@pytest.fixture(scope="module")
def live() -> HerdResult:
    if not sys.platform.startswith("linux"):
        pytest.skip("needs epoll and procfs")
    # 16 connections: a worker may still be on its way to its first sleep when the supervisor takes
    # the "before" context-switch snapshot, adding at most one switch per worker (4/16 = 0.25).
    return api.herd(ServerSpec(workers=4).validated(), SequentialLoad(connections=16), (*ONE, *HERD))


@LINUX_ONLY
@pytest.mark.parametrize("mode", HERD)
def test_herd_modes_wake_more_than_one_worker(live: HerdResult, mode: str) -> None:
    row = live.row(mode)
    assert row.served == 16 and row.failed == 0
    assert row.accepts == 16
    assert row.woken_per_connection is not None
    # Every idle worker is asleep on the socket before each connection (settle); a herd wakes them
    # all and each one's return to sleep is a voluntary context switch.
    assert row.woken_per_connection >= HERD_THRESHOLD, row
    assert row.herd is True and row.as_expected is True
    # One connection at a time: a wakeup that reached user space accepted one, or found EAGAIN.
    assert row.max_batch == 1
    assert row.wakeups == row.accepts + row.empty


@LINUX_ONLY
@pytest.mark.parametrize("mode", ONE)
def test_exclusive_modes_wake_one_worker(live: HerdResult, mode: str) -> None:
    row = live.row(mode)
    assert row.served == 16 and row.failed == 0
    assert row.woken_per_connection is not None
    assert row.woken_per_connection < HERD_THRESHOLD, row
    assert row.herd is False and row.as_expected is True
    assert row.empty == 0  # nobody was woken for nothing
    assert row.accepts_per_wakeup == 1.0


@LINUX_ONLY
def test_every_run_carries_kernel_evidence(live: HerdResult) -> None:
    for run in live.runs:
        assert len(run.evidence["listeners"]["start"]) == 1  # all shared-queue modes
        assert len(run.evidence["affinity"]) == 4
    shown = text_of(herd_report(live))
    assert "Kernel evidence" in shown
    assert "namespace" in shown


@LINUX_ONLY
def test_live_round_trip_through_a_file(live: HerdResult, tmp_path: Path) -> None:
    path = tmp_path / "herd.json"
    envelope.save(path, "herd", live.to_dict())
    kind, doc = documents.load(path)
    assert kind == "herd"
    again = HerdResult.from_dict(doc)
    assert again == live
    assert text_of(render_document(kind, doc)) == text_of(herd_report(live))


# ------------------------------------------------------------------------------------------------
# Pure: rows, verdicts, rendering
# ------------------------------------------------------------------------------------------------


def fake_run(mode: str, switches: list[int | None], wakeups: int = 4, empty: int = 0) -> RunResult:
    workers = len(switches)
    counters = tuple(
        WorkerCounters(
            index=i,
            pid=100 + i,
            wakeups=wakeups,
            accepts=wakeups - empty,
            empty=empty,
            max_batch=2 if i == 0 else 1,
            voluntary_switches=s,
            involuntary_switches=1,
            cpu_s=0.002 * (i + 1),
            affinity=(0, 1),
        )
        for i, s in enumerate(switches)
    )
    served = sum(c.accepts for c in counters)
    woken = None if any(s is None for s in switches) else sum(s or 0 for s in switches) / served
    env = Environment("Linux", "6.x", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")
    server = ServerSpec(mode=mode, workers=workers)
    recs = tuple(ConnectionRecord(k, k % workers, 100, k * 10, 5) for k in range(served))
    verdict = Verdict("p", None, 0, 0, "why", 1.0, 1.0, True, woken)
    return RunResult(server, SequentialLoad(connections=served), env, 5000, recs, counters, verdict)


def test_herd_row_sums_workers() -> None:
    row = _row(fake_run("poll", [8, 8, 8, 8], wakeups=3, empty=1))
    assert (row.wakeups, row.accepts, row.empty, row.max_batch) == (12, 8, 4, 2)
    assert row.voluntary == 32 and row.involuntary == 4
    assert row.cpu_s == pytest.approx(0.02)
    assert row.woken_per_connection == 4.0
    assert row.accepts_per_wakeup == pytest.approx(8 / 12)
    assert row.herd is True and row.herds is True and row.expected_woken == 4
    assert row.as_expected is True
    assert row.verdict() == "herd: wakes ~4 of 4"


def test_unexpected_result_is_flagged() -> None:
    row = _row(fake_run("epoll", [8, 8, 8, 8]))  # EPOLLEXCLUSIVE that woke everybody
    assert row.herd is True and row.as_expected is False
    shown = text_of(herd_table(HerdResult(4, 16, 0, 511, (fake_run("epoll", [8, 8, 8, 8]),))))
    assert "(expected 1)" in shown


def test_unmeasured_switches() -> None:
    row = _row(fake_run("blocking", [None, 1]))
    assert row.voluntary is None and row.herd is None and row.as_expected is None
    assert row.verdict().startswith("not measured")


def test_table_lists_skipped_modes_and_settings() -> None:
    result = HerdResult(2, 4, 1500, 64, (fake_run("blocking", [2, 2]),), {"reuseport": "no SO_REUSEPORT"})
    shown = text_of(herd_report(result, per_worker=True))
    assert "not available: no SO_REUSEPORT" in shown
    assert "no herd: wakes 1" in shown
    assert "2 workers, 4 sequential connections per mode, work 1.5 ms, backlog 64" in shown
    assert "cpu ms" in shown  # the per-worker table
    assert HerdResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_row_without_acceptor_counts_workers_cpu_and_latency() -> None:
    run = fake_run("blocking", [2, 2])  # 8 connections, 5 µs each; workers' CPU 2 + 4 ms
    row = _row(run)
    assert row.acceptor_cpu_s is None and row.acceptor_woken_per_connection is None
    assert row.cpu_us_per_connection == pytest.approx(0.006 * 1e6 / 8)
    assert row.latency_p50_us == row.latency_p99_us == 5
    shown = text_of(herd_table(HerdResult(2, 4, 0, 511, (run,))))
    assert "cpu µs/conn" in shown and "p50 ms" in shown and "p99 ms" in shown
    assert " 750 " in shown and "750*" not in shown and "0.01" in shown


def test_nearest_rank_latency_and_unknowns() -> None:
    assert nearest_rank([], 50) is None
    assert nearest_rank([7], 99) == 7
    assert nearest_rank(list(range(1, 101)), 50) == 50
    assert nearest_rank(list(range(100, 0, -1)), 99) == 99
    assert nearest_rank([1, 2, 3, 4], 50) == 2  # the lower middle value
    # A worker's CPU unknown: no CPU per connection; failed connections are not latencies.
    run = fake_run("blocking", [2, None])
    recs = (*run.records, ConnectionRecord(9, None, None, 90, 999_999, "refused"))
    row = _row(
        dataclasses.replace(
            run, counters=(run.counters[0], dataclasses.replace(run.counters[1], cpu_s=None)), records=recs
        )
    )
    assert row.cpu_us_per_connection is None
    assert row.latency_p99_us == 5


def test_acceptor_cpu_is_added_and_marked() -> None:
    run = fake_run("fd-pass", [4, 4])
    acceptor = {"pid": 9, "policy": "round-robin", "passed": [4, 4], "lost": 0, "voluntary_switches": 12,
                "involuntary_switches": 0, "cpu_s": 0.002}  # fmt: skip
    row = _row(dataclasses.replace(run, evidence={"acceptor": acceptor}))
    assert row.acceptor_cpu_s == 0.002
    assert row.cpu_us_per_connection == pytest.approx((0.002 + 0.004 + 0.002) * 1e6 / 8)
    assert row.acceptor_woken_per_connection == pytest.approx(12 / 8)
    assert row.woken_per_connection == 1.0  # the workers' measure, the acceptor's sleeps not in it
    # An acceptor whose CPU is unknown: the mode's CPU per connection is unknown too.
    unknown = _row(dataclasses.replace(run, evidence={"acceptor": {**acceptor, "cpu_s": None}}))
    assert unknown.acceptor_cpu_s is None and unknown.cpu_us_per_connection is None


@LINUX_ONLY
def test_fd_pass_row_includes_the_acceptor() -> None:
    fd_pass = run_sequential(ServerSpec(mode="fd-pass", workers=3), SequentialLoad(connections=9))
    plain = run_sequential(ServerSpec(mode="epoll", workers=3), SequentialLoad(connections=9))
    acceptor = fd_pass.evidence["acceptor"]
    row = _row(fd_pass)
    assert row.served == 9
    assert row.acceptor_cpu_s == acceptor["cpu_s"]
    workers_cpu = sum(c.cpu_s for c in fd_pass.counters)
    assert row.cpu_us_per_connection == pytest.approx((workers_cpu + acceptor["cpu_s"]) * 1e6 / 9, abs=1e-3)
    assert row.acceptor_woken_per_connection == pytest.approx(acceptor["voluntary_switches"] / 9)
    assert row.latency_p50_us is not None and row.latency_p99_us is not None
    assert 0 < row.latency_p50_us <= row.latency_p99_us
    assert row.latency_p99_us == max(r.latency_us for r in fd_pass.records)  # nearest rank of 9
    assert _row(plain).acceptor_cpu_s is None
    shown = text_of(herd_report(HerdResult(3, 9, 0, 511, (plain, fd_pass))))
    (line,) = [ln for ln in shown.splitlines() if ln.strip().startswith("fd-pass ")]
    assert f"{row.cpu_us_per_connection:.0f}*" in line
    assert f"{row.latency_p50_us / 1000:.2f}" in line and f"{row.latency_p99_us / 1000:.2f}" in line
    (epoll,) = [ln for ln in shown.splitlines() if ln.strip().startswith("epoll ")]
    assert "*" not in epoll
    assert "acceptor (pid" in shown  # its own line under the kernel evidence


def test_v1_herd_file_renders_without_acceptor() -> None:
    kind, doc = documents.load(Path(__file__).parent / "data" / "v1" / "herd.json")
    result = HerdResult.from_dict(doc)
    for row in result.rows:
        assert row.acceptor_cpu_s is None
        assert row.latency_p50_us is not None and row.latency_p99_us is not None
    shown = text_of(render_document(kind, doc))
    assert "cpu µs/conn" in shown and "*" not in shown.split("wakeups:")[0]


def test_by_default_herd_runs_every_mode_this_machine_has(monkeypatch: pytest.MonkeyPatch) -> None:
    """No --modes: every built-in mode, in the registry's order, 4 workers and 20 settled connections each;
    a mode this machine lacks is listed with its reason and never started."""
    started: list[tuple[ServerSpec, SequentialLoad]] = []

    def record(spec: ServerSpec, load: SequentialLoad, on_record: object = None) -> RunResult:
        started.append((spec, load))
        return fake_run(spec.mode, [4] * spec.workers)

    monkeypatch.setattr(order_api, "run_sequential", record)
    monkeypatch.setattr(MODES["epoll-herd"], "unavailable", lambda: "pretend this kernel lacks it")
    result = run_cli(["herd"])
    assert result.exit_code == 0, result.output
    expected = [m for m in MODES if MODES[m].unavailable() is None]
    assert "epoll-herd" not in expected and {"blocking", "epoll", "poll", "select"} <= set(expected)
    assert [spec.mode for spec, _ in started] == expected
    assert {(spec.kind, spec.workers) for spec, _ in started} == {("builtin", 4)}
    assert {(load.connections, load.settle, load.gap_ms) for _, load in started} == {(20, True, 0.0)}
    (skipped,) = [line.split() for line in result.stdout.splitlines() if line.strip().startswith("epoll-herd ")]
    assert " ".join(skipped[-7:]) == "not available: pretend this kernel lacks it", skipped


def test_bad_options_fail_before_any_worker_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_run(*args: object, **kwargs: object) -> RunResult:
        raise AssertionError("a run started")

    monkeypatch.setattr(order_api, "run_sequential", no_run)
    load = SequentialLoad(connections=2)
    with pytest.raises(PlanError):
        api.herd(ServerSpec(workers=2), load, ["blocking", "nonsense"])
    with pytest.raises(PlanError):
        api.herd(ServerSpec(workers=0), load, ["blocking"])
    with pytest.raises(PlanError):
        api.herd(ServerSpec(workers=2), load, [])


# ------------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--modes", "blocking,nope"], "'nope' is not a mode of builtin"),
        (["--modes", ","], "',' names no mode"),
        (["--workers", "0"], "Invalid value for '--workers'"),
        (["--backlog", "0"], "Invalid value for '--backlog'"),
        (["--connections", "x"], "'x' is not a valid integer"),
    ],
)
def test_cli_usage_errors_are_one_line(args: list[str], message: str) -> None:
    result = run_cli(["herd", *args])
    assert_one_error_line(result, 2, message)
    assert result.stdout == ""


@LINUX_ONLY
def test_cli_herd_writes_json_and_show_prints_it(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    result = run_cli(["herd", "--modes", "blocking,epoll-herd", "-w", "2", "-n", "4", "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert "accept-order herd" in result.stdout and "epoll-herd" in result.stdout
    kind, doc = documents.load(path)
    assert kind == "herd"
    herd = HerdResult.from_dict(doc)
    assert [r.mode for r in herd.runs] == ["blocking", "epoll-herd"]
    assert all(r.server.workers == 2 and len(r.records) == 4 for r in herd.runs)
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == result.stdout  # `show` prints the herd exactly as `herd` did
