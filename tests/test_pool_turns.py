"""The worker pool forks its workers together and lets them register their waits one at a time, in index order
(servers/pool.py): a worker forked but not yet given its turn has registered nothing, and a turn the pool closes
without giving it ends that worker (its pipe reads end of file: no worker holds another's giving end)."""

from __future__ import annotations

import os
import sys

import pytest
from conftest import wait_for

from accept_order.core import forked
from accept_order.core.errors import WorkerError
from accept_order.core.spec import ServerSpec
from accept_order.servers.pool import WorkerPool
from accept_order.servers.worker import FAULT_ENV

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="epoll and /proc are Linux's")
WAIT_S = 30.0  # a bound for what happens at once (a busy machine may take long to schedule a child)


def epolls_of(pid: int) -> int:
    """How many epoll instances process `pid` holds (the kernel's fd table: its registration)."""
    found = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[eventpoll]"
        except OSError:
            pass  # closed meanwhile (the listing's own descriptor)
    return found


def test_workers_after_one_that_never_waits_are_forked_but_register_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULT_ENV, "never-ready:0")  # worker 0 registers its epoll, then never says it is ready
    pool = WorkerPool(ServerSpec(mode="epoll", workers=3).validated(), ready_timeout_s=1.0)
    try:
        with pytest.raises(WorkerError, match="worker 0 did not become ready"):
            pool.start()
        assert [proc.is_alive() for proc in pool.procs] == [True, True, True]  # forked together
        pids = [proc.pid for proc in pool.procs]
        assert all(pid is not None for pid in pids)
        # Worker 0 had its turn at once, but on a busy machine it may register after the pool's 1 s has run out:
        # wait for its epoll (only a hang is bounded), then only worker 0 may hold one.
        wait_for(lambda: epolls_of(pids[0] or 0), lambda n: n >= 1, WAIT_S, "worker 0's epoll")
        assert [epolls_of(pid) for pid in pids if pid is not None] == [1, 0, 0]  # only worker 0 had its turn
        # A turn closed without its byte ends the worker that waits for it: it alone held the reading end.
        for index in (1, 2):
            os.close(pool._turns[index])
            pool._turns[index] = -1
        for proc in pool.procs[1:]:
            assert forked.wait([proc.sentinel], WAIT_S) == [proc.sentinel]
            proc.join(WAIT_S)
            assert proc.exitcode == 0
    finally:
        pool.close()
    assert all(proc.exitcode is not None for proc in pool.procs)
