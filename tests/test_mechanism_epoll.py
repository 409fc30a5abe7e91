"""How inspect names an epoll from what /proc shows of each worker's: one instance shared, each its own with
EPOLLEXCLUSIVE on the listener, or not. A watcher without EPOLLEXCLUSIVE is woken by every connection, so
one is enough to make a herd: only when every worker's epoll has the flag is it `epoll`."""

from __future__ import annotations

import pytest

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen

LISTENER = Listener(inode=4242, address="127.0.0.1", port=8080)


def worker(pid: int, exclusive: bool | None, epoll_id: str | None = None) -> Seen:
    return Seen(
        pid=pid,
        tid=pid,
        call="epoll_wait",
        via="epoll",
        listeners=frozenset({LISTENER.inode}),
        exclusive=exclusive,
        epoll_id=epoll_id or f"epoll-of-{pid}",
        holds=frozenset({LISTENER.inode}),
    )


def named(seen: list[Seen]) -> str | None:
    parents = {s.pid: 1 for s in seen}  # all children of one master, which waits on nothing here
    return classify(seen, [LISTENER], parents, {}).mechanism


@pytest.mark.parametrize(
    ("flags", "mechanism"),
    [
        ((True, True, True), "epoll"),
        ((False, False, False), "epoll-herd"),
        ((True, True, False), "epoll-herd"),  # the one without the flag is woken by every connection
        ((False, True, True), "epoll-herd"),
        ((True, None, True), "epoll-herd"),  # a flag /proc did not show is not the flag
    ],
)
def test_each_own_epoll_is_exclusive_only_when_every_one_is(flags: tuple[bool | None, ...], mechanism: str) -> None:
    assert named([worker(100 + i, flag) for i, flag in enumerate(flags)]) == mechanism


def test_one_instance_shared_is_epoll_shared_whatever_its_flags() -> None:
    assert named([worker(100 + i, flag, "one") for i, flag in enumerate((True, False, True))]) == "epoll-shared"
