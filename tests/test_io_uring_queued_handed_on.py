"""Connections queued in the listener when the first armed ring filled go to the worker a later arrival wakes: they
wake nobody, and that arrival's wakeup has the next armed worker's multishot accept take them too (io_uring's accept
goes on while the socket holds more). The mode's why, the latency model's note and burst's ring note said they waited
for the first worker to arm again; queueing.py's `first` hands them on as here.

By hand ('serve -m io-uring -w 2 --work 100ms', load 7): 140 connections at once, the first worker answered all 140;
with one more 30 ms later, before it reaped its full ring, 130/11, 3 of 3. Here worker 0 serves one connection for
3 s; 139 more fill its ring (128 completions and the one that ends its accept) and leave 10 in the listener's queue
(netlink's Recv-Q, the witness); one more then has worker 1 take 11 (its own published count), worker 0 none more."""

from __future__ import annotations

import socket

import pytest

from accept_order.core.spec import ServerSpec
from accept_order.core.waiting import wait_for
from accept_order.probes.listeners import netlink_listeners
from accept_order.servers.modes import MODES
from accept_order.servers.pool import WorkerPool

RING = 129  # the completions a ring holds, and the one that ends its accept riding on the last


def test_a_later_arrival_hands_the_queued_connections_on() -> None:
    if reason := MODES["io-uring"].unavailable():
        pytest.skip(reason)
    with WorkerPool(ServerSpec(mode="io-uring", workers=2, work_us=3_000_000).validated()) as pool:
        port = pool.address[1]

        def queued() -> int:
            return sum(row.queue for row in netlink_listeners(port))

        held = [socket.create_connection(pool.address, timeout=10)]
        assert wait_for(lambda: pool.accepted_by(0) == 1, 10), "worker 0 did not take the first connection"
        held += [socket.create_connection(pool.address, timeout=10) for _ in range(RING + 10)]
        # worker 0's ring fills when its task_work runs: after the burst (10 left queued), or during it, when the
        # ones still to arrive wake worker 1 as they come (the race burst's note says: then nothing is left queued)
        settled = wait_for(lambda: queued() == 10 or pool.accepted_by(1) > 0, 10)
        assert settled, (queued(), pool.accepted_by(0), pool.accepted_by(1))
        if pool.accepted_by(1):
            pytest.skip(f"worker 0's ring filled while the burst still arrived: worker 1 took {pool.accepted_by(1)}")
        if pool.accepted_by(0) != 1:
            pytest.skip("worker 0 reaped its ring before the later connection: its new accept took the queue")
        held.append(socket.create_connection(pool.address, timeout=10))
        taken = wait_for(lambda: pool.accepted_by(1) == 11 and queued() == 0, 10)
        counts = (pool.accepted_by(0), pool.accepted_by(1), queued())
        pool.stop()
        for sock in held:
            sock.close()
    assert taken, counts  # the 10 queued and the later one; with them left for worker 0: 1
    assert counts[0] == 1, counts  # worker 0 still on its first connection: it took none of them
