"""The listeners a server serves otherwise than the mechanism named for it (pure: no /proc here).

A server may listen on two ports in two ways: HAProxy with `bind :8080 shards by-thread` beside a plain
`bind :8081`, nginx with `listen 80 reuseport` beside `listen 8080`. One sample names one mechanism for the
whole server (mechanism.classify: a SO_REUSEPORT group wins), so the other port's listener, which every thread
waits on, was described by the group's words: observe of HAProxy (4 threads) driven only on the plain bind read
'reuseport ... the kernel picks the thread by a hash' and 'each worker has a queue of its own, so none takes
another's connection' of 8,349 empty accepts from a herd (bpftrace counted the same accepts, split 37/11/29/24%).
Each address and port is classified alone here, and those whose mechanism differs are named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from .mechanism import classify
from .mechanism_values import Listener, Seen


def served_otherwise(
    seen: Sequence[Seen],
    listeners: Sequence[Listener],
    parent: Mapping[int, int],
    sockets: Mapping[int, frozenset[int]],
    named: str | None,
    known_lock: str | None = None,
) -> tuple[str, ...]:
    """One sentence for each address and port whose listeners, classified alone, show another mechanism than
    `named` (the one sample's, or the samples', answer); nothing where the server listens on one port or
    `named` is None (no waiter seen)."""
    ports: dict[tuple[str, int], list[Listener]] = {}
    for listener in listeners:
        ports.setdefault((listener.address, listener.port), []).append(listener)
    if named is None or len(ports) < 2:
        return ()
    said = []
    for (address, port), own in ports.items():
        inodes = frozenset(listener.inode for listener in own)
        alone = [_on(s, inodes) for s in seen]
        verdict = classify(alone, own, parent, sockets, known_lock)
        if verdict.mechanism is None or verdict.mechanism == named:
            continue
        where = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        said.append(
            f"{where} is served otherwise, as {verdict.mechanism}: {verdict.evidence[0]} (what is said of "
            f"{named} does not hold for its connections)"
        )
    return tuple(said)


def _on(seen: Seen, inodes: frozenset[int]) -> Seen:
    """`seen` waiting on `inodes` alone, with EPOLLEXCLUSIVE as its epoll watches those: nginx with `listen 80
    reuseport` beside `listen 8080` watches its own socket of the group without it and the shared one with it, and
    the thread's one flag (every watch exclusive: no) read the shared port as a herd."""
    mine = seen.listeners & inodes
    if seen.via == "epoll" and not mine and seen.holds & inodes:
        # waiting on another port's listener in an epoll without this one, which it holds: a lock decides who
        # listens here (nginx's accept_mutex beside a reuseport listen read 'epoll: 1 worker waits')
        return replace(seen, via="idle", listeners=frozenset(), exclusive=None)
    exclusive = seen.exclusive if seen.exclusive is not False else bool(mine) and mine <= seen.exclusive_on
    return replace(seen, listeners=mine, exclusive=exclusive)
