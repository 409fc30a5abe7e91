"""Debian's HAProxy started by hand for the inspect and observe tests of its config (multi-queue, nbthread), and the
attach test of an h2c port (test_h2c_advice_names_the_server: its bind and the HTTP/2 preface it answers).

Those tests read a server accept-order did not start, so they start HAProxy themselves from a config of the test's
own, in the foreground, each reply naming the thread that served it. One copy for both (they were written twice,
the same config, request and start), and one of the observe reload tests' pieces (each was written two or three
times): a config whose TCP session keeps a soft-stopped process alive, a newcomer started with -sf, its first
answer, and HAProxy in master-worker mode. Imported by name, as conftest's helpers are (tests/ is on sys.path; no
test_ prefix, so pytest collects nothing here)."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from cluster import dies_with
from network import pid_answering

from accept_order.servers.launched.haproxy import haproxy_missing

THREADS = 4
START_TIMEOUT_S = 20.0


def config(port: int, settings: str = "", threads: int = THREADS, bind: str = "") -> str:
    """A config of `threads` threads answering on 127.0.0.1:`port` (`bind`'s options after it), `settings` added to
    its global section."""
    return f"""global
    nbthread {threads}
{settings}
defaults
    mode http
    timeout client 10s
    timeout server 10s
    timeout connect 10s

frontend f
    bind 127.0.0.1:{port}{bind}
    http-request return status 200 content-type text/plain lf-string "worker %[thread] pid %pid\\n"
"""


def held_config(port: int, held_port: int, backend: int) -> str:
    """Two threads answering on `port` with their pid, and a TCP frontend on `held_port` to `backend` whose session
    keeps a soft-stopped process alive (see held_session)."""
    return f"""global
    nbthread 2
defaults
    timeout client 120s
    timeout server 120s
    timeout connect 10s
frontend f
    mode http
    bind 127.0.0.1:{port}
    http-request return status 200 content-type text/plain lf-string "worker %[thread] pid %pid\\n"
frontend held
    mode tcp
    bind 127.0.0.1:{held_port}
    default_backend b
backend b
    mode tcp
    server s 127.0.0.1:{backend}
"""


@contextlib.contextmanager
def held_session(held_port: int, backend: socket.socket) -> Iterator[socket.socket]:
    """A TCP session through held_config's `held_port` frontend, up once `backend` has accepted it (the process that
    holds it outlives its soft stop until the block ends): the client's socket."""
    with socket.create_connection(("127.0.0.1", held_port), timeout=10) as client:
        backend.settimeout(START_TIMEOUT_S)
        with backend.accept()[0]:
            yield client


def started(config_path: Path, *extra: str) -> subprocess.Popen[bytes]:
    """Debian's HAProxy in the foreground from `config_path` (`extra`: '-sf', PID to take the port over from PID and
    tell it to finish), not waited for; it dies with the thread that starts it (PR_SET_PDEATHSIG), the caller ends
    it."""
    return subprocess.Popen(
        ["haproxy", "-db", "-f", str(config_path), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=dies_with(os.getpid()),
    )


def ask(port: int) -> int:
    """One request on a connection of its own: the thread number the reply names."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/")
        return int(connection.getresponse().read().split()[1])
    finally:
        connection.close()


def answered_by_new(port: int, before: set[int], served: Counter[int]) -> int:
    """The pid that answers once a reload's newcomer took the listener over from those `before`; what they answered
    meanwhile is added to `served`."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        with contextlib.suppress(OSError):
            pid = pid_answering(port)
            served[pid] += 1
            if pid not in before:
                return pid
        assert time.monotonic() < deadline, "no new HAProxy answered after the reload"
        time.sleep(0.02)  # polling a server's start-up: there is no event to wait on


def answering(
    pid: int,
    port: int,
    threads: int,
    alive: Callable[[], bool],
    said: Callable[[], str] = str,
    asked: Callable[[int], object] = ask,
) -> None:
    """Wait until HAProxy `pid` answers on `port` with all its threads there; `said()`: what it wrote, if it exited;
    `asked(port)`: raises OSError until it answers (one request over HTTP/1.1 unless given)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        assert alive(), f"HAProxy {pid} exited: {said()}"
        try:
            asked(port)
            if len(os.listdir(f"/proc/{pid}/task")) == threads:
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "HAProxy did not answer"
        time.sleep(0.02)  # polling a server's start-up: there is no event to wait on


@contextlib.contextmanager
def haproxy(
    config_path: Path,
    port: int,
    threads: int = THREADS,
    env: dict[str, str] | None = None,
    asked: Callable[[int], object] = ask,
) -> Iterator[subprocess.Popen[bytes]]:
    """Debian's HAProxy started by hand in the foreground (`env`: its whole environment, this one's if None),
    answering on `port` (as `answering` asks it) with all its threads there; skips where there is no HAProxy."""
    missing = haproxy_missing()
    if missing:
        pytest.skip(f"a real HAProxy: {missing}")
    process = subprocess.Popen(  # killed by the kernel if pytest is, even by SIGKILL
        ["haproxy", "-db", "-f", str(config_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=dies_with(os.getpid()),
        env=env,
    )
    try:
        answering(process.pid, port, threads, lambda: process.poll() is None, lambda: _said(process), asked)
        yield process
    finally:
        # its external checks too, which would outlive it: stopped first, it starts no other meanwhile
        process.send_signal(signal.SIGSTOP)
        children: list[psutil.Process] = []
        with contextlib.suppress(psutil.Error):
            children = psutil.Process(process.pid).children(recursive=True)
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
        process.kill()
        process.wait(10)


@contextlib.contextmanager
def master_worker(config_path: Path, port: int, threads: int = THREADS) -> Iterator[tuple[int, int]]:
    """Debian's HAProxy in master-worker mode (-W, in the foreground), in a session of its own so that the group is
    killed at the end (the master and every worker it forked): (the master's pid, its first worker's, once that
    worker answers on `port` with its `threads` threads there)."""
    process = subprocess.Popen(
        ["haproxy", "-W", "-db", "-f", str(config_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=dies_with(os.getpid()),
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert process.poll() is None, "HAProxy's master exited"
            with contextlib.suppress(OSError):
                worker = pid_answering(port)
                if len(os.listdir(f"/proc/{worker}/task")) == threads:
                    break
            assert time.monotonic() < deadline, "HAProxy did not answer"
            time.sleep(0.02)  # polling a server's start-up: there is no event to wait on
        yield process.pid, worker
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def _said(process: subprocess.Popen[bytes]) -> str:
    """The end of what an exited HAProxy wrote on stderr (its alerts: why it stopped), without waiting for the pipe's
    end: an external check it forked may still hold it."""
    assert process.stderr is not None
    os.set_blocking(process.stderr.fileno(), False)
    try:
        written = process.stderr.read() or b""
    except BlockingIOError:
        written = b""
    return written.decode(errors="replace")[-800:] or "(nothing on its stderr)"
