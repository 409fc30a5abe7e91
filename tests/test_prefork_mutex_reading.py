"""inspect of Apache prefork with two Listens (the accept mutex) under a keep-alive load read 'epoll-herd': each
child holds an epoll that watches every listener (APR's pollset) and waits in it only while it holds the mutex, so
running children, taken for their epoll's waiters, looked like uWSGI's herd workers. A free lock leaves no trace in
/proc (with wrk -c16 at 3 children, none of 200 samples saw a child waiting for it), so the kind says it
(ServerKind.lock_first, which Apache declares: single-threaded children holding two or more listeners), and where a
sibling does wait for the lock, a running sibling takes it too before it waits (analysis/mechanism.py)."""

from __future__ import annotations

import socket

import pytest
from conftest import wait_for
from ended_at_once import end_at_once

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen
from accept_order.core.kinds import ServerKind
from accept_order.core.models import Mechanism
from accept_order.core.spec import ServerSpec
from accept_order.experiments.inspect.run import inspect
from accept_order.experiments.inspect.sample import _taking_lock
from accept_order.probes.proc_waits import EPOLL_WAITS, ThreadWait, thread_wait
from accept_order.servers.launched.apache import ApacheServer
from accept_order.servers.launched.apache_config import LOCK_FIRST as APACHE_PREFORK
from accept_order.servers.launched.apache_config import apache_missing
from accept_order.servers.registry import KINDS, checked, server_kind

HELD = frozenset({4242, 4243})  # two Listens
LISTENERS = [Listener(4242, "127.0.0.1", 80), Listener(4243, "127.0.0.1", 443)]
PARENT = {100: 1, 101: 100, 102: 100, 103: 100}  # the master 100 and its children


def holder(pid: int) -> Seen:
    return Seen(pid, pid, "epoll_wait", "epoll", listeners=HELD, exclusive=False, epoll_id=f"{pid}:7", holds=HELD)


def busy(pid: int) -> Seen:
    """What resolve makes of a running child: its pollset's waiter (the listeners are nonblocking)."""
    return Seen(pid, pid, "running", "epoll", listeners=HELD, exclusive=False, epoll_id=f"{pid}:7", holds=HELD)


def loser(pid: int) -> Seen:
    return Seen(pid, pid, "futex", "lock", holds=HELD, wchan="rt_mutex_schedule")


def taker(pid: int) -> Seen:
    """What the kind's rule (sample._taking_lock) makes of a running child."""
    return Seen(pid, pid, "running", "lock", holds=HELD)


def test_a_running_child_beside_one_waiting_for_the_lock_takes_it_too() -> None:
    verdict = classify([holder(101), loser(102), busy(103)], LISTENERS, PARENT, {})
    assert verdict.mechanism == "accept-mutex", verdict
    assert verdict.waiters == ((101, 101),) and set(verdict.losers) == {(102, 102), (103, 103)}
    assert "wait for a lock" in verdict.evidence[0] and "are running (they take the lock" in verdict.evidence[0]
    # no lock waiter: a running child is still taken for its epoll's waiter, as a herd worker's is (uWSGI's)
    assert classify([holder(101), busy(103)], LISTENERS, PARENT, {}).mechanism == "epoll-herd"
    # no holder seen waiting on the listener: the running one may hold the lock (uWSGI's thunder lock under load)
    alone = classify([loser(102), busy(103)], LISTENERS, PARENT, {})
    assert alone.mechanism == "accept-mutex" and alone.waiters == ((103, 103),)
    # a lock waiter of another parent says nothing of this one's children
    other = Seen(200, 200, "futex", "lock", holds=HELD)
    assert classify([holder(101), busy(103), other], LISTENERS, {**PARENT, 200: 2}, {}).mechanism == "epoll-herd"


def test_running_children_the_kind_says_take_the_lock_first() -> None:
    known = APACHE_PREFORK.why
    verdict = classify([holder(101), taker(102), taker(103)], LISTENERS, PARENT, {}, known)
    assert verdict.mechanism == "accept-mutex" and len(verdict.losers) == 2
    assert verdict.evidence[1] == known
    # every child busy: no waiter at all, the lock the kind's
    every = classify([taker(101), taker(102), loser(103)], LISTENERS, PARENT, {}, known)
    assert every.mechanism == "accept-mutex" and every.waiters == ()
    assert every.evidence == (
        "no worker waits on the listener at this moment: 2 holding it are running, 1 waits for a lock",
        known,
    )
    assert classify([taker(101), taker(102)], LISTENERS, PARENT, {}).mechanism is None  # nothing known


def test_the_kind_rule_turns_a_running_child_into_a_lock_taker() -> None:
    polled = Seen(102, 102, "poll", "poll", listeners=HELD, holds=HELD)  # its set, unread, taken to be the listeners
    read = Seen(103, 103, "poll", "poll", listeners=HELD, holds=HELD)
    waits = (ThreadWait(102, "apache2", "poll", fds=None), ThreadWait(103, "apache2", "poll", fds=(3,)))
    made = _taking_lock([busy(101), polled, read, holder(104), loser(105)], waits)
    assert [(s.via, s.listeners) for s in made] == [
        ("lock", frozenset()),
        ("other", frozenset()),  # an Apache prefork child polls its kept connection, never its listeners
        ("poll", HELD),  # a set read: what it says
        ("epoll", HELD),
        ("lock", frozenset()),
    ]


def test_the_rule_is_apache_preforks_with_two_listeners() -> None:
    rule = server_kind("apache").lock_first
    assert rule is APACHE_PREFORK
    assert rule.applies(1, 2) and rule.applies(1, 3)
    assert not rule.applies(1, 1)  # one Listen: no mutex (SINGLE_LISTEN_UNSERIALIZED_ACCEPT)
    assert not rule.applies(27, 2)  # an event child: threaded, no accept mutex
    assert rule.among(frozenset({1, 2, 9}))(1, frozenset({1, 2, 5}))
    assert not rule.among(frozenset({1, 9}))(1, frozenset({1, 2, 5}))  # 2 is no listener
    assert server_kind("uwsgi").lock_first is None and ServerKind.lock_first is None


def test_a_kind_that_declares_a_lock_first_has_a_mode_seen_as_accept_mutex() -> None:
    """The kind says it (no table by kind name in inspect): one that takes such a lock has the mode to explain it."""
    declared = [name for name in KINDS if server_kind(name).lock_first is not None]
    assert declared == ["apache"]
    for name in declared:
        assert any(m.mechanism == Mechanism.ACCEPT_MUTEX for m in server_kind(name).modes().values()), name


REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
WORK_US = 6_000_000  # long enough for the look on a busy machine; the children spin, then answer


@pytest.mark.skipif(apache_missing() is not None, reason=f"Apache launched runs: {apache_missing()}")
@pytest.mark.parametrize("workers", [3, 2])
def test_prefork_mutex_with_busy_children_reads_accept_mutex(workers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two children of a prefork-mutex in their handler's busy loop (a kept connection each): with 3 children the
    third holds the mutex in epoll_wait and nobody waits for the lock; with 2 every child is running. Both read
    epoll-herd before (2 of 3 and 2 of 2 children taken for their pollset's waiters)."""
    spec = checked(ServerSpec(kind="apache", mode="prefork-mutex", workers=workers, work_us=WORK_US, keepalive=True))
    # the rule inspect applies is the kind's own declaration (ServerKind.lock_first), not a copy kept by name
    declared = APACHE_PREFORK._replace(why=APACHE_PREFORK.why + " [as declared]")
    monkeypatch.setattr(type(server_kind("apache")), "lock_first", declared)
    with ApacheServer(spec) as server:
        clients = [socket.create_connection(server.address, timeout=30) for _ in range(2)]
        try:
            for client in clients:
                client.sendall(REQUEST)

            def calls() -> list[str]:
                return sorted(thread_wait(pid, pid).call for pid in server.pids)

            def settled(now: list[str]) -> bool:  # two spin; a third (if any) holds the mutex in epoll_wait
                return now.count("running") == 2 and all(c in EPOLL_WAITS for c in now if c != "running")

            wait_for(calls, settled, 10, "two children in their handler's busy loop")
            result = inspect(port=server.port)
        finally:
            for client in clients:
                client.close()
            end_at_once(server)  # its close() would wait up to 2 s for the spinning children
    assert result.mechanism.name == "accept-mutex", result.mechanism
    assert result.mechanism.modes == ("prefork-mutex",)
    assert declared.why in result.mechanism.evidence
    takers = [unit for unit in result.units if unit.role == "lock"]
    assert len(takers) == 2
    # said as running, not as asleep in FUTEX_LOCK_PI (views.py)
    assert all(unit.on.startswith("running: takes the lock before it waits") for unit in takers), takers
