"""observe's sleeps (voluntary context switches) of a worker that is a whole process of threads are every thread's, as
latency --attach reads them (servers/thread_switches.WorkerUsage, one reading for both): observe read /proc/PID/status,
the main thread's alone, so 'slept N times per connection' meant another thing in each. Checked against the kernel's
own figures, each thread's /proc/PID/task/TID/status, around a short load of real threaded servers: gunicorn's
gthread workers (PyPI), Puma's cluster workers and Caddy (Debian's) where installed. The main thread's reading (a Puma
worker's sleeps in ppoll: 0 where its threads slept hundreds of times) falls short of the kernel's figure.

The kernel's figure is read in observe's own thread, right after observe's first reading (its first snapshot), then
in the test's thread once the load is over and before observe is told to stop (so before observe's last reading: the
lower bound), and right after observe's last reading (the upper bound): only the server's idle wakeups fall between
them and observe's. A Go server (Caddy) wakes often when idle (its sysmon thread): the lower bound once used the reading
after observe returned, and a busy machine's slow finish gave Caddy 28 wakeups there (1024 against 1052 - 20)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from gunicorn_gthread import fetch, gunicorn_gthread  # noqa: F401 - the fixture
from observed_while import the_result

from accept_order.core.processes import usage
from accept_order.core.spec import ServerSpec
from accept_order.experiments.observe.api import observe
from accept_order.experiments.observe.result import ObservedWorker, ObserveResult
from accept_order.experiments.observe.verdict import sleeps
from accept_order.servers.registry import checked

CONNECTIONS = 120  # sequential, each one a request: every thread that serves one sleeps between them
IDLE = 20  # switches either end's gap (a few ms, seconds on a busy machine) may hold: the idle wakeups
TIMEOUT_S = 120.0

Thread = tuple[int, int]  # (thread id, start time): an id the kernel reuses is another thread


def kernel_switches(pid: int) -> dict[Thread, int]:
    """Each thread's voluntary context switches, from its own /proc/PID/task/TID/status (the kernel's figures)."""
    found: dict[Thread, int] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                started = int(f.read().rpartition(b")")[2].split()[19])
            with open(f"/proc/{pid}/task/{tid}/status", "rb") as f:
                (line,) = [line for line in f if line.startswith(b"voluntary_ctxt_switches:")]
        except (OSError, ValueError):
            continue  # ended meanwhile
        found[(int(tid), started)] = int(line.split()[1])
    return found


@dataclass
class Readings:
    """The kernel's figures and the main thread's reading of each worker, after observe's first reading (`start`)
    and after its last (`end`)."""

    start: dict[int, dict[Thread, int]] = field(default_factory=dict)
    stopping: dict[int, dict[Thread, int]] = field(default_factory=dict)  # the load over, observe not yet told
    end: dict[int, dict[Thread, int]] = field(default_factory=dict)
    main_start: dict[int, int] = field(default_factory=dict)
    main_end: dict[int, int] = field(default_factory=dict)

    def take(self, pids: list[int], at_start: bool) -> None:
        every, main = (self.start, self.main_start) if at_start else (self.end, self.main_end)
        for pid in pids:
            every[pid], main[pid] = kernel_switches(pid), usage(pid)[0]

    def take_stopping(self, pids: list[int]) -> None:
        for pid in pids:
            self.stopping[pid] = kernel_switches(pid)

    def kernel(self, pid: int, stopping: bool = False) -> int:
        """Every thread's switches from the first reading to the last (or to the one before observe was told to
        stop), in the threads there then (one born meanwhile from 0): those of a thread that ended are lost, so
        this is at most what the threads did."""
        before, after = self.start[pid], (self.stopping if stopping else self.end)[pid]
        return sum(count - before.get(thread, 0) for thread, count in after.items())

    def ended(self, pid: int) -> bool:
        return not self.start[pid].keys() <= self.end[pid].keys()


def observed_under_load(port: int, pids: list[int]) -> tuple[ObserveResult, Readings]:
    """observe (untraced: the switches are read alike either way) while CONNECTIONS sequential requests are made,
    all of them between its first and last readings, the kernel's figures read beside those two."""
    readings, began, until, out = Readings(), threading.Event(), threading.Event(), list[object]()

    def first(_result: ObserveResult) -> None:
        if not began.is_set():  # right after observe's first reading, in its own thread
            readings.take(pids, at_start=True)
            began.set()

    def run() -> None:
        try:
            out.append(observe(port=port, duration_s=TIMEOUT_S, trace=False, on_snapshot=first, until=until))
            readings.take(pids, at_start=False)  # right after its last reading, in its own thread
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            out.append(exc)
            began.set()

    watcher = threading.Thread(target=run, daemon=True)
    watcher.start()
    try:
        assert began.wait(TIMEOUT_S), "observe did not start"
        for _ in range(CONNECTIONS):
            fetch(port)
        readings.take_stopping(pids)  # before observe's last reading: what it counts is at least this
    finally:
        until.set()
        watcher.join(TIMEOUT_S)
    assert not watcher.is_alive(), "observe did not end"
    return the_result(out), readings


@pytest.fixture
def puma() -> Iterator[tuple[int, list[int]]]:
    from accept_order.servers.launched.puma import PumaServer, puma_missing

    if puma_missing():
        pytest.skip(f"Puma: {puma_missing()}")
    with PumaServer(checked(ServerSpec(kind="puma", mode="cluster", workers=2))) as server:
        yield server.port, list(server.pids)


@pytest.fixture
def caddy() -> Iterator[tuple[int, list[int]]]:
    from accept_order.servers.launched.caddy import CaddyServer, caddy_missing

    if caddy_missing() or shutil.which("caddy") is None:
        pytest.skip(f"Caddy: {caddy_missing()}")
    with CaddyServer(checked(ServerSpec(kind="caddy", mode="netpoller", workers=1))) as server:
        yield server.port, list(server.pids)


@pytest.mark.parametrize("server", ["gunicorn_gthread", "puma", "caddy"])
def test_observe_reads_every_threads_sleeps_as_the_kernel_counts_them(
    server: str, request: pytest.FixtureRequest
) -> None:
    port, pids = request.getfixturevalue(server)
    result, readings = observed_under_load(port, pids)
    assert sorted(w.pid for w in result.workers) == sorted(pids) and all(w.tid is None for w in result.workers)
    mains = kernels = 0
    for worker in result.workers:
        kernel = readings.kernel(worker.pid)
        main = readings.main_end[worker.pid] - readings.main_start[worker.pid]
        said = f"worker {worker.pid}: observe {worker.voluntary_switches}, every thread {kernel}, main thread {main}"
        assert worker.voluntary_switches is not None, said
        # the threads' switches up to the load's end, which observe's window holds but for its first gap
        assert worker.voluntary_switches >= readings.kernel(worker.pid, stopping=True) - IDLE, said
        if not readings.ended(worker.pid):  # no thread took switches the kernel's figure cannot see any more
            assert worker.voluntary_switches <= kernel + IDLE, said
        mains, kernels = mains + main, kernels + kernel
    # the main thread's reading would fail the test: these servers' other threads sleep for the connections too
    assert mains < kernels - IDLE * len(pids), f"main threads {mains}, every thread {kernels}: the test says nothing"


GOLDEN = Path(__file__).parent / "data" / "golden" / "observe.json"


def one_worker(looked: int, unlooked: int, segments: int) -> ObserveResult:
    """The golden observation with one worker that took 300 connections and slept 2,400 times."""
    base = ObserveResult.from_dict(json.loads(GOLDEN.read_text()))
    worker = replace(
        ObservedWorker(0, 100, None, 300, 0, None, 1.0, 2_400, 0),
        connections_observed=looked,
        bytes_in=segments * 80,
        segments_in=segments,
    )
    return replace(base, workers=(worker,), intervals=(), closes_counted=unlooked, closed_unlooked=unlooked)


def test_one_workers_short_connections_closed_between_looks_are_slept_per_connection() -> None:
    """One worker's connections that opened and closed between two looks have their segments counted to it (load.py),
    not its connections seen: Caddy's 300 one-request connections, one of them seen, read 'slept 8.04 times per data
    segment ...; a connection carried 300 of them', and none seen 'per connection'. The closes counted are
    connections too."""
    assert sleeps(one_worker(looked=1, unlooked=299, segments=300)) == (
        "the workers slept 8.00 times per connection (voluntary context switches: at most the wakeups)"
    )
    long_lived = sleeps(one_worker(looked=8, unlooked=2, segments=24_000))  # keep-alive: still per segment
    assert long_lived is not None and "0.10 times per data segment" in long_lived and "carried 2,400" in long_lived
    # 8 kept connections beside 300 short ones: 308 connections (the larger of the two counts read 300)
    mixed = sleeps(one_worker(looked=8, unlooked=300, segments=308 * 30))
    assert mixed is not None and "carried 30 of them" in mixed, mixed
