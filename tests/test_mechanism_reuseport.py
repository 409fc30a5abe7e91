"""A SO_REUSEPORT group under load: the other workers may be busy (running, not waiting) at every sample. One
worker waiting on its own socket of the group still names the mechanism; it took two waiters before, and
observe of HAProxy's shards under load called it 'epoll: only one worker waits ... it takes every one' (1 run
in 5 of tests/test_observe.py::test_haproxy_threads_are_the_workers)."""

from __future__ import annotations

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen

GROUP = (Listener(inode=41, address="127.0.0.1", port=8080), Listener(inode=42, address="127.0.0.1", port=8080))


def waiting(tid: int, inode: int) -> Seen:
    return Seen(pid=100, tid=tid, call="epoll_wait", via="epoll", listeners=frozenset({inode}), exclusive=False,
                epoll_id=f"epoll-of-{tid}", holds=frozenset({41, 42}))  # fmt: skip


def running(tid: int) -> Seen:
    return Seen(pid=100, tid=tid, call="running", via="running", holds=frozenset({41, 42}))


def test_one_waiter_on_its_own_socket_of_a_group_is_reuseport() -> None:
    verdict = classify([waiting(101, 41), running(102)], list(GROUP), {100: 1}, {})
    assert verdict.mechanism == "reuseport", verdict
    assert classify([waiting(101, 41), waiting(102, 42)], list(GROUP), {100: 1}, {}).mechanism == "reuseport"


def test_one_waiter_on_a_lone_socket_or_on_the_whole_group_is_not() -> None:
    lone = Listener(inode=41, address="127.0.0.1", port=8080)
    assert classify([waiting(101, 41), running(102)], [lone], {100: 1}, {}).mechanism != "reuseport"
    both = Seen(pid=100, tid=101, call="epoll_wait", via="epoll", listeners=frozenset({41, 42}), exclusive=False,
                epoll_id="e", holds=frozenset({41, 42}))  # fmt: skip
    assert classify([both, running(102)], list(GROUP), {100: 1}, {}).mechanism != "reuseport"


def test_the_group_named_is_the_one_waited_on_and_an_unknown_socket_proves_none() -> None:
    other = (Listener(inode=51, address="127.0.0.1", port=8443), Listener(inode=52, address="127.0.0.1", port=8443))
    verdict = classify([waiting(101, 51), running(102)], [*GROUP, *other], {100: 1}, {})
    assert verdict.mechanism == "reuseport"
    assert "127.0.0.1:8443" in verdict.evidence[0], verdict.evidence
    unknown = Seen(pid=100, tid=101, call="accept", via="accept", listeners=frozenset({99}))
    assert classify([unknown], list(GROUP), {100: 1}, {}).mechanism != "reuseport"
