"""HAProxy (Debian's) as a server the tool launches, with threads as its workers: its own log agrees with the
replies, shards give each thread its own listener (the kernel says so), tune.maxaccept is --accept-batch,
and its process is the tool's to end."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest
from conftest import gone

from accept_order.core.spec import ConcurrentLoad, SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.servers.launched.base import free_port
from accept_order.servers.launched.haproxy import HAPROXY_MODES, HaproxyServer, haproxy_missing, render_config

if haproxy_missing():
    pytest.skip(f"haproxy launched runs: {haproxy_missing()}", allow_module_level=True)


@pytest.mark.parametrize(("mode", "listeners"), [("threads", 1), ("shards", 3)])
def test_its_log_agrees_and_threads_are_the_workers(mode: str, listeners: int) -> None:
    me = psutil.Process()
    seen: list[int] = []

    def on_record(_: object) -> None:
        if not seen:
            (proc,) = [p for p in me.children() if p.name() == "haproxy"]
            seen.append(proc.pid)
            seen.extend(sorted(t.id for t in proc.threads()))

    server = ServerSpec(kind="haproxy", mode=mode, workers=3, accept_batch=64)
    result = session.run_sequential(server, SequentialLoad(connections=18), on_record)
    assert result.failed == 0 and result.served == 18
    witness = result.evidence["witness"]
    assert witness["source"] == "haproxy log"
    assert [pid for pid, _ in witness["requests"]] == [r.pid for r in result.records]
    assert [c.pid for c in result.counters] == seen[1:]  # the workers are the process's threads, in order
    assert len(result.evidence["listeners"]["start"]) == listeners
    assert gone(seen[:1])


def test_threads_take_turns_at_idle() -> None:
    """One listener: the accepting thread hands each connection to the least loaded thread's queue."""
    result = session.run_sequential(
        ServerSpec(kind="haproxy", mode="threads", workers=3, accept_batch=64), SequentialLoad(connections=9)
    )
    assert [r.worker for r in result.records] == [0, 1, 2] * 3
    assert result.verdict.expected


def test_accept_batch_is_tune_maxaccept() -> None:
    mode = HAPROXY_MODES["threads"]
    assert "tune.maxaccept 8\n" in render_config(ServerSpec(kind="haproxy", accept_batch=8), mode, 80, "/x")
    assert "tune.maxaccept -1\n" in render_config(ServerSpec(kind="haproxy", accept_batch=0), mode, 80, "/x")
    shards = render_config(ServerSpec(kind="haproxy", workers=2), HAPROXY_MODES["shards"], 80, "/x")
    assert shards.count(" thread ") == 2


def test_under_load_with_work_every_connection_is_counted() -> None:
    result = session.run_latency(
        ServerSpec(kind="haproxy", mode="shards", workers=2, work_us=200, accept_batch=64),
        ConcurrentLoad(connections=1000, concurrency=8),
    )
    assert result.errors == {} and sum(result.served) == 1000 and all(n > 0 for n in result.served)


_HALF_WATCHED = """
import select, socket, sys
port = int(sys.argv[1])
listeners = []
for _ in range(2):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", port)); s.listen(8); listeners.append(s)
poller = select.epoll()
poller.register(listeners[0].fileno(), select.EPOLLIN)  # the second listener: in no poller yet
print("up", flush=True)
sys.stdin.read()
"""


def test_ready_waits_for_each_listener_in_a_poller() -> None:
    """Two listeners on the port, one of them in an epoll: polled(2) is False, polled(1) True (a HAProxy
    thread still in its start-up barrier has its listener open but in no poller; inspect then finds one
    waiter, as it once did in CI)."""
    server = HaproxyServer(ServerSpec(kind="haproxy", mode="shards", workers=2))
    server.port = free_port("127.0.0.1")
    stand_in = subprocess.Popen(
        [sys.executable, "-c", _HALF_WATCHED, str(server.port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert stand_in.stdout is not None and stand_in.stdout.readline() == b"up\n"
        server.master = stand_in
        assert server.listening(2) and server.polled(1) and not server.polled(2)
    finally:
        stand_in.kill()
        stand_in.wait()
