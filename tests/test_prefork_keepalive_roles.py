"""inspect of Apache prefork with two Listens (the accept mutex) under a keep-alive load: a child polling its kept
connection for the next request had no role (a look read '2 workers' for 3 children, 1 look in 10 under wrk -c16),
and running children were said to hold 'no lock' though, with no child seen waiting with the mutex, one of them may
hold it (between its wakeup and its accept, which /proc does not show). Now a single-threaded sibling of the
workers that holds the listeners and waits in something else is a busy worker (analysis/mechanism.py
Verdict.busy), and a running lock taker is 'lock?' where no one is seen waiting with the lock, 'no lock' where
one is."""

from __future__ import annotations

import socket

import pytest
from conftest import wait_for
from ended_at_once import end_at_once

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen
from accept_order.core.spec import ServerSpec
from accept_order.experiments.inspect.report import _role
from accept_order.experiments.inspect.run import inspect
from accept_order.probes.proc_waits import thread_wait
from accept_order.servers.launched.apache import ApacheServer
from accept_order.servers.launched.apache_config import LOCK_FIRST as APACHE_PREFORK
from accept_order.servers.launched.apache_config import apache_missing
from accept_order.servers.registry import checked

HELD = frozenset({4242, 4243})  # two Listens
LISTENERS = [Listener(4242, "127.0.0.1", 80), Listener(4243, "127.0.0.1", 443)]
PARENT = {100: 1, 101: 100, 102: 100, 103: 100, 200: 100}


def taker(pid: int) -> Seen:
    """A running child, as the kind's rule makes it (sample._taking_lock)."""
    return Seen(pid, pid, "running", "lock", holds=HELD)


def polling(pid: int, tid: int | None = None) -> Seen:
    """A child in poll() on its kept connection (its set not read, so not taken to be its listeners)."""
    return Seen(pid, tid or pid, "poll", "other", holds=HELD, wchan="do_poll")


def test_a_child_polling_its_kept_connection_is_a_busy_worker() -> None:
    parent = Seen(100, 100, "pselect6", "other", holds=HELD)  # Apache's parent: a master, not a worker
    verdict = classify([parent, taker(101), taker(102), polling(103)], LISTENERS, PARENT, {}, APACHE_PREFORK.why)
    assert verdict.mechanism == "accept-mutex"
    assert verdict.busy == ((103, 103),), verdict
    # a threaded process's other threads serve no connection of their own (an event child's pool)
    threaded = [taker(101), taker(102), polling(200), polling(200, 201)]
    assert classify(threaded, LISTENERS, PARENT, {}, APACHE_PREFORK.why).busy == ()
    # another parent's process is not of the workers' family, and one holding no listener serves none of theirs
    stranger = Seen(300, 300, "poll", "other", holds=HELD)
    quiet = Seen(104, 104, "poll", "other")
    assert (
        classify([taker(101), taker(102), stranger, quiet], LISTENERS, {**PARENT, 300: 2, 104: 100}, {}, "x").busy == ()
    )


def test_a_running_taker_may_hold_the_lock_where_no_one_waits_with_it() -> None:
    assert _role("lock", "running", holder=False) == "lock?"
    assert _role("lock", "running", holder=True) == "no lock"  # the holder waits on the listeners
    assert _role("lock", "futex", holder=False) == "no lock"  # it waits for the lock: it does not hold it
    assert _role("busy", "poll", holder=False) == "busy"


REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
WORK_US = 6_000_000  # long enough for the look on a busy machine; the children spin, then answer


@pytest.mark.skipif(apache_missing() is not None, reason=f"Apache launched runs: {apache_missing()}")
def test_prefork_mutex_with_a_kept_connection_polled_has_every_child_a_role() -> None:
    """3 children: one accepted a connection whose request has not come whole (it polls it, as it does a kept
    connection between requests), two spin in the handler. No child waits with the mutex."""
    spec = checked(ServerSpec(kind="apache", mode="prefork-mutex", workers=3, work_us=WORK_US, keepalive=True))
    with ApacheServer(spec) as server:
        kept = socket.create_connection(server.address, timeout=30)
        clients: list[socket.socket] = []
        try:
            kept.sendall(b"GET / HTTP/1.1\r\n")  # data, so the deferred accept hands it over; not the whole request

            def calls() -> list[str]:
                return sorted(thread_wait(pid, pid).call for pid in server.pids)

            wait_for(calls, lambda now: "poll" in now, 10, "a child polling its connection")
            clients = [socket.create_connection(server.address, timeout=30) for _ in range(2)]
            for client in clients:
                client.sendall(REQUEST)
            wait_for(calls, lambda now: now == ["poll", "running", "running"], 10, "two children in the busy loop")
            result = inspect(port=server.port)
        finally:
            for client in [kept, *clients]:
                client.close()
            end_at_once(server)  # its close() would wait up to 2 s for the spinning children
    assert result.mechanism.name == "accept-mutex", result.mechanism
    assert result.workers == 3, result.units
    assert sorted(u.role for u in result.units) == ["busy", "lock", "lock"]
    busy = next(u for u in result.units if u.role == "busy")
    assert busy.call == "poll" and "serving a connection" in busy.on
    assert {p.role for p in result.processes if p.pid in server.pids} == {"worker"}
    takers = [u for u in result.units if u.role == "lock"]
    assert all("may hold it now" in u.on for u in takers), takers
