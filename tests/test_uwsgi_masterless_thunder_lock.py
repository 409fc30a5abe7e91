"""Review RS of 20edc13: the kind's lock is named only where two or more processes share it, counted among
siblings. uWSGI without --master has none: its first process is worker 1 and the parent of worker 2, so with
--thunder-lock and both workers busy it read 'epoll-herd' again (accept-mutex with c96a88c alone). A process of the
kind's layout that waits on its listeners, runs for them or waits for the lock takes part (sample.take), Apache's
parent (in pselect6) does not: prefork-mutex -w 1 still reads epoll (tests/test_lock_among_one_child.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest
from conftest import gone, wait_for

from accept_order.experiments.inspect.run import inspect
from accept_order.probes.proc_waits import thread_wait
from accept_order.servers.launched.uwsgi import WAITS, uwsgi_missing, wait_syscall
from accept_order.servers.launched.uwsgi_thunder import THUNDER_LOCK

REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
WORK_US = 6_000_000  # long enough for the look on a busy machine; the workers spin, then answer


@pytest.fixture
def masterless(free_port: int) -> Iterator[tuple[int, list[int]]]:
    """A uWSGI with --thunder-lock and two workers, no master: its port and its two processes, both waiting."""
    port = free_port
    argv = [sys.executable, "-c", "import sys, pyuwsgi; sys.exit(pyuwsgi.run())", "--thunder-lock", "--processes", "2"]
    argv += ["--http-socket", f"127.0.0.1:{port}", "--module", "accept_order.servers.launched.uwsgi_app:app"]
    env = dict(os.environ, ACCEPT_ORDER_WORK_US=str(WORK_US), ACCEPT_ORDER_WORK_ITERS="0")
    first = subprocess.Popen(
        [*argv, "--need-app"], env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    pids: list[int] = []
    try:

        def processes() -> list[int]:
            return [first.pid, *(p.pid for p in psutil.Process(first.pid).children())]

        pids = wait_for(processes, lambda now: len(now) == 2, 30, "worker 1 forks worker 2")
        wait_for(lambda: [wait_syscall(pid) for pid in pids], lambda now: all(c in WAITS for c in now), 30, "idle")
        yield port, pids
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # worker 2 is in worker 1's session
        first.wait(10)
        wait_for(lambda: pids, gone, 10, "worker 2 ends")


@pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI launched runs: {uwsgi_missing()}")
def test_masterless_thunder_lock_with_both_workers_busy(masterless: tuple[int, list[int]]) -> None:
    port, pids = masterless
    assert psutil.Process(pids[1]).ppid() == pids[0]  # not siblings: the case itself
    clients = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(2)]
    try:
        for client in clients:
            client.sendall(REQUEST)
        wait_for(lambda: [thread_wait(p, p).call for p in pids], lambda now: now == ["running"] * 2, 10, "both busy")
        result = inspect(port=port)
    finally:
        for client in clients:
            client.close()
    assert result.mechanism.name == "accept-mutex", result.mechanism
    assert THUNDER_LOCK.why in result.mechanism.evidence
    assert [u.role for u in result.units] == ["lock", "lock"]
