"""Faults: a worker that never becomes ready or dies, a busy port, a stuck worker. Each ends the run
within a few seconds with an error naming the worker, counts every driven connection, and leaves no
process behind (the autouse fixture in conftest.py checks the last part after every test).
"""

from __future__ import annotations

import errno
import functools
import io
import re
import socket
import time
from collections.abc import Callable

import psutil
import pytest
from conftest import assert_one_error_line, run_cli
from rich.console import Console

from accept_order import ListenError, PlanError, RunResult, WorkerError, WorkerPool, run
from accept_order.core.measures import ConnectionRecord
from accept_order.core.protocol import ClientProtocol
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.core.target import ReplyAttribution
from accept_order.experiments.order.report import run_report
from accept_order.loads.sequential import run_sequential
from accept_order.servers import pool as pool_module
from accept_order.servers.worker import FAULT_ENV

READY_TIMEOUT_S = 1.0  # shorter than the default 15 s, to keep the suite fast


def fast_ready_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make run()/the CLI give up on a worker that is not ready after READY_TIMEOUT_S.

    servers.make_target looks WorkerPool up in servers.pool each time it builds a server."""
    patched = functools.partial(pool_module.WorkerPool, ready_timeout_s=READY_TIMEOUT_S)
    monkeypatch.setattr(pool_module, "WorkerPool", patched)


class Undying:
    """A started pool as a client sees it, minus death detection (no pidfds, check_alive a no-op), so a
    drive goes on past a worker's death; `settle_hook`, if given, runs before each connection."""

    def __init__(self, pool: WorkerPool, settle_hook: Callable[[], None] | None = None) -> None:
        self.pool = pool
        self.settle_hook = settle_hook

    @property
    def address(self) -> tuple[str, int]:
        return self.pool.address

    @property
    def protocol(self) -> ClientProtocol:
        return self.pool.protocol

    @property
    def pids(self) -> list[int]:
        return self.pool.pids

    @property
    def attribution(self) -> ReplyAttribution:
        return self.pool.attribution

    def death_fds(self) -> list[int]:
        return []

    def check_alive(self) -> None:
        pass

    def settle(self) -> None:
        if self.settle_hook:
            self.settle_hook()


@pytest.mark.parametrize("mode", ["blocking", "epoll", "reuseport"])
def test_worker_never_ready_is_named(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv(FAULT_ENV, "never-ready:1")
    spec = ServerSpec(mode=mode, workers=3).validated()
    started = time.monotonic()
    with pytest.raises(WorkerError, match=r"worker 1 did not become ready within 1 s") as info:
        with WorkerPool(spec, ready_timeout_s=READY_TIMEOUT_S):
            pytest.fail("the pool should not start")
    assert info.value.index == 1
    assert time.monotonic() - started < READY_TIMEOUT_S + 4


def test_worker_never_ready_via_api_and_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "never-ready:2")
    fast_ready_timeout(monkeypatch)
    with pytest.raises(WorkerError, match="worker 2 did not become ready"):
        run(mode="epoll", workers=3, connections=3)
    assert_one_error_line(run_cli(["run", "-m", "blocking"]), 1, "worker 2 did not become ready")


def test_worker_that_fails_to_start_is_named_without_a_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    # A CPU that does not exist makes worker 0 fail to pin itself before it reports ready.
    # (ServerSpec.validated() refuses such a spec up front; it is left unvalidated to reach the worker.)
    spec = ServerSpec(mode="epoll", workers=2, cpus=(100_000,))
    with pytest.raises(PlanError, match="100000"):
        spec.validated()
    started = time.monotonic()
    with pytest.raises(WorkerError, match=r"worker 0 could not start: .*100000") as info:
        with WorkerPool(spec, ready_timeout_s=READY_TIMEOUT_S):
            pass
    assert info.value.index == 0
    assert time.monotonic() - started < READY_TIMEOUT_S + 4
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("mode", ["blocking", "epoll"])
@pytest.mark.parametrize("connections", [1, 6])
def test_worker_dying_on_accept_is_named(monkeypatch: pytest.MonkeyPatch, mode: str, connections: int) -> None:
    # Worker 0 gets the first connection in both modes (blocking: the supervisor starts each worker
    # once the previous one sleeps in accept, so worker 0 heads the FIFO; epoll: the lowest idle index
    # wins). With one connection the death can only be noticed after the drive, at stop().
    monkeypatch.setenv(FAULT_ENV, "die-on-accept:0")
    started = time.monotonic()
    with pytest.raises(WorkerError, match=r"worker 0 \(pid \d+\) died with exit code 3") as info:
        run(mode=mode, workers=3, connections=connections)
    assert info.value.index == 0
    assert time.monotonic() - started < 5


def test_worker_dying_via_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "die-on-accept:0")
    assert_one_error_line(run_cli(["run", "-m", "epoll"]), 1, "worker 0", "died with exit code 3")


@pytest.mark.parametrize(("mode", "connections"), [("blocking", 6), ("epoll", 6), ("reuseport", 40)])
def test_connections_to_a_dying_worker_are_counted(
    monkeypatch: pytest.MonkeyPatch, mode: str, connections: int
) -> None:
    """Driven without stopping at the death: every connection ends as served or failed, with the error."""
    monkeypatch.setenv(FAULT_ENV, "die-on-accept:0")
    spec = ServerSpec(mode=mode, workers=3).validated()
    load = SequentialLoad(connections=connections, timeout_s=2.0, settle=False).validated()
    with WorkerPool(spec) as pool:
        records = run_sequential(Undying(pool), load)
        with pytest.raises(WorkerError, match="worker 0"):
            pool.wait_for_death()
    assert len(records) == connections
    served = [r for r in records if r.served]
    failed = [r for r in records if not r.served]
    assert len(served) + len(failed) == connections
    # Worker 0 took one (reuseport: at least one of 40 hashes to its queue, odds 1 - (2/3)**40).
    assert failed, [r.worker for r in records]
    for rec in failed:
        assert rec.error, rec
        assert rec.worker is None and rec.pid is None
    assert all(r.worker in (1, 2) for r in served)


def test_timeouts_are_counted_as_failures() -> None:
    # One worker, busy 2 s per connection, clients that wait 0.3 s: both connections fail by timeout.
    result = run(mode="epoll", workers=1, connections=2, work_us=2_000_000, timeout_s=0.3)
    assert len(result.records) == 2
    assert (result.served, result.failed) == (0, 2)
    assert all(r.error == "timeout: no answer within 0.3 s" for r in result.records)
    assert "2 of 2 connections failed" in _report_text(result)


def _report_text(result: RunResult) -> str:
    console = Console(width=200, file=io.StringIO())
    console.print(run_report(result))
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def test_port_in_use_raises_listen_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(ListenError, match=f"port {port} on 127.0.0.1 is already in use") as info:
            run(mode="epoll", port=port)
        assert info.value.exit_code == 1


def test_bad_plans_raise_plan_error_before_any_process_starts() -> None:
    for options in (
        {"mode": "nope"},
        {"workers": 0},
        {"workers": 10**6},
        {"connections": 0},
        {"host": "example"},
        {"gap_ms": -1},
    ):
        with pytest.raises(PlanError) as info:
            run(**options)
        assert info.value.exit_code == 2
        assert psutil.Process().children() == []


def test_a_run_stopped_by_a_dying_worker_accounts_for_what_it_drove(monkeypatch: pytest.MonkeyPatch) -> None:
    # Worker 1 dies on its first accept; which connection that is depends on the order, so only the
    # accounting is asserted: the message adds up, and at least the connection it took failed.
    monkeypatch.setenv(FAULT_ENV, "die-on-accept:1")
    with pytest.raises(WorkerError, match="worker 1") as info:
        run(mode="blocking", workers=3, connections=6)
    found = re.search(r"the run stopped after (\d+) connections \((\d+) served, (\d+) failed\)", str(info.value))
    assert found, str(info.value)
    driven, served, failed = map(int, found.groups())
    assert served + failed == driven and failed >= 1 and 1 <= driven <= 6


def test_connections_in_flight_when_a_run_stops_end_as_records() -> None:
    # Paced connections overlap; stopping the drive (here: the hook raises) must not drop the in-flight one.
    spec = ServerSpec(mode="epoll", workers=1, work_us=300_000).validated()
    load = SequentialLoad(connections=3, gap_ms=20, timeout_s=5).validated()
    seen: list[ConnectionRecord] = []
    calls = 0

    def stop_on_second() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise WorkerError("stop", 0)

    with WorkerPool(spec) as pool, pytest.raises(WorkerError):
        run_sequential(Undying(pool, settle_hook=stop_on_second), load, on_record=seen.append)
    assert [r.seq for r in seen] == [0]
    assert seen[0].error is not None and seen[0].error.startswith("aborted")


def test_a_connection_the_client_cannot_open_is_a_failed_record(monkeypatch: pytest.MonkeyPatch) -> None:
    # Out of file descriptors on the client side (EMFILE) is a failure with its errno, not a crash.
    spec = ServerSpec(mode="blocking", workers=1).validated()
    real_socket = socket.socket
    calls = 0

    def flaky_socket(*args: object, **kwargs: object) -> socket.socket:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError(errno.EMFILE, "Too many open files")
        return real_socket(*args, **kwargs)  # type: ignore[arg-type]

    with WorkerPool(spec) as pool:
        monkeypatch.setattr("accept_order.loads.sequential.RawSocket", flaky_socket)
        records = run_sequential(pool, SequentialLoad(connections=3, timeout_s=5).validated())
    assert [r.served for r in records] == [True, False, True]
    assert records[1].error is not None and records[1].error.startswith("EMFILE")
