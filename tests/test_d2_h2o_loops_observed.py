"""observe of h2o (num-threads 4): its event loops are its workers, as latency counts them (loops_are_workers).

A user's observe of h2o read "1 worker ... its one worker took all 8 connections", where one loop of four had taken
them all (the symptom an SRE hunts), and "slept 0.00 times per data segment" while a loop thread slept 2,008 times:
observe split a process into threads only for kinds whose every thread is a worker, and h2o's timer thread serves
none. Witnesses: /proc (each loop thread waits in epoll_wait between events, the timer thread in clock_nanosleep),
a bpftrace of the test's own counting h2o's accepts by thread, h2o's access log (a connection id per request), and
each thread's own context switches in /proc/PID/task/TID/status.
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OutputReader, wait_for
from h2o_config import started_h2o

from accept_order.api import observe
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.server import Unit, find_server
from accept_order.probes.bpftrace_messages import ATTACHED_ENV
from accept_order.probes.proc_waits import thread_wait

H2O = shutil.which("h2o")
BPFTRACE = shutil.which("bpftrace")
LOOPS = 4
CONNECTIONS = 8
REQUESTS = 25  # over each kept connection: its loop sleeps between them
TIMEOUT_S = 20.0
KICK_S = 0.25  # bpftrace not gone this long after SIGINT: SIGUSR1 wakes its poll loop again

pytestmark = [
    pytest.mark.skipif(H2O is None, reason="h2o is not installed"),
    pytest.mark.skipif(os.geteuid() != 0 or BPFTRACE is None, reason="counting accepts needs root and bpftrace"),
]


def tids_of(pid: int) -> list[int]:
    return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))


def switches(pid: int, tid: int) -> int:
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches:"))


@pytest.fixture
def h2o(tmp_path: Path, free_port: int) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    with started_h2o(tmp_path, free_port, LOOPS, TIMEOUT_S) as server:
        yield server, free_port, tmp_path


class OwnCount:
    """The test's own bpftrace: h2o's accepts that returned a socket, by thread."""

    def __init__(self, pid: int) -> None:
        assert BPFTRACE is not None
        script = (
            f"tracepoint:syscalls:sys_exit_accept4, tracepoint:syscalls:sys_exit_accept /pid == {pid} && "
            'args->ret >= 0/ { @[tid] = count(); } END { printf("counts\\n"); print(@); clear(@); }'
        )
        env = {**os.environ, ATTACHED_ENV: "1"}
        self.proc = subprocess.Popen(
            [BPFTRACE, "-B", "line", "-e", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True
        )
        assert self.proc.stdout is not None
        self.out = OutputReader(self.proc.stdout)
        self.out.wait_for(ATTACHED_ENV, TIMEOUT_S)

    def stop(self) -> dict[int, int]:
        """SIGINT, then SIGUSR1 until it exits: bpftrace 0.17 misses a SIGINT that lands before its epoll_wait
        (probes/accepts.py's stop() does the same)."""
        self.proc.send_signal(signal.SIGINT)
        kicked = [time.monotonic()]

        def exited() -> int | None:
            if (code := self.proc.poll()) is None and time.monotonic() - kicked[0] > KICK_S:
                self.proc.send_signal(signal.SIGUSR1)
                kicked[0] = time.monotonic()
            return code

        try:
            wait_for(exited, lambda code: code is not None, TIMEOUT_S, "bpftrace's exit")
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        text = self.out.finish()
        after = text[text.index("counts\n") :]
        return {int(line[2 : line.index("]")]): int(line.split()[-1]) for line in after.splitlines() if "@[" in line}


def observed_while_kept(port: int) -> ObserveResult:
    """observe h2o by its port while CONNECTIONS keep-alive connections, opened once the probes are attached,
    make REQUESTS requests each; the observation ends when they are closed."""
    until, errors = threading.Event(), []

    def drive() -> None:
        try:
            kept = [http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S) for _ in range(CONNECTIONS)]
            for conn in kept:
                conn.connect()
            for _ in range(REQUESTS):
                for conn in kept:
                    conn.request("GET", "/")
                    reply = conn.getresponse()
                    assert reply.status == 200 and reply.read() == b"ok\n"
            for conn in kept:
                conn.close()
        except (OSError, AssertionError) as exc:
            errors.append(exc)
        finally:
            until.set()

    driver = threading.Thread(target=drive)

    def first(result: ObserveResult) -> None:
        if not driver.is_alive() and not until.is_set():
            driver.start()

    try:
        result = observe(port=port, duration_s=TIMEOUT_S, on_snapshot=first, until=until)
    finally:
        driver.join(TIMEOUT_S)
    assert not errors and until.is_set(), errors or "the load did not finish before the observation ended"
    return result


def test_observe_of_h2o_counts_each_event_loop_as_a_worker(h2o: tuple[subprocess.Popen[bytes], int, Path]) -> None:
    server, port, folder = h2o
    loops = [tid for tid in tids_of(server.pid) if thread_wait(server.pid, tid).call == "epoll_wait"]
    others = [tid for tid in tids_of(server.pid) if tid not in loops]
    assert len(loops) == LOOPS and others, others  # h2o 2.2: a thread beside its loops that serves none
    before = {tid: switches(server.pid, tid) for tid in loops}
    own = OwnCount(server.pid)
    try:
        result = observed_while_kept(port)
    finally:
        counted = own.stop()
    after = {tid: switches(server.pid, tid) for tid in loops}
    assert result.traced and result.threaded, result.workers
    assert [w.tid for w in result.workers] == loops  # the loops, not the process, nor the thread beside them
    assert {w.tid: w.accepts for w in result.workers} == {tid: counted.get(tid, 0) for tid in loops}
    assert sum(counted.values()) == CONNECTIONS
    logged = {line.strip() for line in (folder / "access.log").read_text().splitlines() if line.strip()}
    assert len(logged) == CONNECTIONS  # h2o's own connection ids: as many as were accepted
    for worker in result.workers:  # each loop's sleeps are its own thread's, not the main thread's alone
        assert worker.voluntary_switches is not None and worker.tid is not None
        assert 0 <= worker.voluntary_switches <= after[worker.tid] - before[worker.tid]
        if worker.accepts:  # it served REQUESTS requests over each connection it took, sleeping between them
            assert worker.voluntary_switches >= REQUESTS, (worker, after, before)


def test_h2o_with_one_loop_is_one_worker(tmp_path: Path, free_port: int) -> None:
    """One loop beside the timer thread: the process is its one worker, as latency models it (one server)."""
    with started_h2o(tmp_path, free_port, 1, TIMEOUT_S) as server:
        assert len(tids_of(server.pid)) > 1  # the loop and the timer thread
        watched = find_server(port=free_port)
    assert watched.units == (Unit(server.pid),) and not watched.threaded
