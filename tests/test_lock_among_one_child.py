"""A lock among one worker decides nothing: Apache prefork-mutex with one child read 'epoll, one waiter' idle and
'accept-mutex' under load, its running child taken for a lock taker by the kind's rule (ServerKind.lock_first).
The rule now names the lock only where two or more children of one parent hold the listeners (sample.take), so one
child reads the same idle and busy, and two busy children still read the lock."""

from __future__ import annotations

import socket

import pytest
from conftest import wait_for
from ended_at_once import end_at_once

from accept_order.core.spec import ServerSpec
from accept_order.experiments.inspect.run import inspect
from accept_order.probes.proc_waits import thread_wait
from accept_order.servers.launched.apache import ApacheServer
from accept_order.servers.launched.apache_config import LOCK_FIRST, apache_missing
from accept_order.servers.registry import checked

REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
WORK_US = 6_000_000  # long enough for the look on a busy machine; the children spin, then answer


@pytest.mark.skipif(apache_missing() is not None, reason=f"Apache launched runs: {apache_missing()}")
@pytest.mark.parametrize(("workers", "busy_reads"), [(1, "epoll"), (2, "accept-mutex")])
def test_every_child_busy_reads_the_lock_only_among_two(workers: int, busy_reads: str) -> None:
    spec = checked(ServerSpec(kind="apache", mode="prefork-mutex", workers=workers, work_us=WORK_US, keepalive=True))
    with ApacheServer(spec) as server:
        idle = inspect(port=server.port)
        clients = [socket.create_connection(server.address, timeout=30) for _ in range(workers)]
        try:
            for client in clients:
                client.sendall(REQUEST)

            def calls() -> list[str]:
                return [thread_wait(pid, pid).call for pid in server.pids]

            wait_for(calls, lambda now: now == ["running"] * workers, 10, "every child in its handler's busy loop")
            busy = inspect(port=server.port)
        finally:
            for client in clients:
                client.close()
            end_at_once(server)  # its close() would wait up to 2 s for the spinning children
    assert busy.mechanism.name == busy_reads, busy.mechanism
    takers = [unit for unit in busy.units if unit.role == "lock"]
    if workers == 1:
        assert idle.mechanism.name == busy.mechanism.name == "epoll", (idle.mechanism, busy.mechanism)
        assert LOCK_FIRST.why not in busy.mechanism.evidence and not takers
    else:
        assert LOCK_FIRST.why in busy.mechanism.evidence and len(takers) == 2
