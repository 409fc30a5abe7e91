"""inspect does not take the one io-uring worker seen asleep for the only one waiting: a ring's accept stays armed,
first among the listener's waiters, while its worker runs.

observe of a 2-worker `serve -m io-uring --work 300us` under `latency --target -c 16` read 'mechanism, read by inspect:
io-uring ...: only one worker waits for connections: it takes every one, whatever it waits in': worker 1 was the one
seen asleep in io_uring_enter, worker 0 was busy serving, and the replies gave worker 0 all 3,040 connections (2 vCPUs,
load 4). Here worker 0 spins 1.5 s on one connection while inspect looks; a connection made meanwhile is the witness:
its reply names worker 0 (its ring accepted it while it ran), not the worker seen waiting."""

from __future__ import annotations

import socket
import time

import pytest

from accept_order.core.models import Model
from accept_order.core.spec import ServerSpec
from accept_order.core.waiting import wait_for
from accept_order.experiments.inspect.run import ALONE, inspect
from accept_order.servers.modes import MODES
from accept_order.servers.pool import WorkerPool


def _reply(client: socket.socket) -> str:
    with client:
        return " ".join(client.recv(100).decode().split()[:2])


def test_a_busy_rings_worker_still_takes_the_connections() -> None:
    if reason := MODES["io-uring"].unavailable():
        pytest.skip(reason)
    with WorkerPool(ServerSpec(mode="io-uring", workers=2, work_us=1_500_000).validated()) as pool:
        first = socket.create_connection(pool.address, timeout=10)
        assert wait_for(lambda: pool.accepted_by(0) == 1, 5), "worker 0 did not take the first connection"
        started = time.monotonic()
        seen = inspect(port=pool.address[1])
        second = socket.create_connection(pool.address, timeout=10)
        looked = time.monotonic() - started
        replies = [_reply(first), _reply(second)]
        pool.stop()
    if looked >= 1.5:
        pytest.skip(f"inspect and the connect took {looked:.2f} s, past worker 0's spin: it was not busy throughout")
    assert replies == ["worker 0", "worker 0"], replies  # the witness: the one seen waiting took none
    mechanism = seen.mechanism
    assert mechanism.name == "io-uring" and mechanism.why != ALONE
    assert mechanism.model == Model.FIRST_REGISTERED
