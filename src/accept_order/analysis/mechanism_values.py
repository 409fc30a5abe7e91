"""The values analysis/mechanism.py reads and answers with: one thread at one look and what it waits in (`Seen`), a
listening socket (`Listener`), and one look's answer (`Verdict`: the mechanism, who waits on the listeners, who is
fed, who holds them without waiting, and why)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Seen:
    """One thread at one sample. `via`: accept, epoll, poll, select, io_uring (waits on `listeners`),
    passed (waits on a Unix socket: `unix_ends` are the inodes at the other end), lock (a futex lock),
    idle (an epoll without a listener, in a process that holds one), ring-unread (asleep in an io_uring whose
    fdinfo could not be read: unknown whether an accept is armed), ring-poll (in one with a poll armed on a
    descriptor its fdinfo does not name, and no accept), aside (a thread its kind says never waits on them, where
    the one that does is seen: Puma's reactor, its control server's 'puma ctl' on a port of its own), running, other."""

    pid: int
    tid: int
    call: str
    via: str
    listeners: frozenset[int] = frozenset()
    exclusive: bool | None = None
    epoll_id: str | None = None  # the epoll instance it waits in: equal ids are one instance
    holds: frozenset[int] = frozenset()
    unix_ends: frozenset[int] = frozenset()
    wchan: str = ""
    exclusive_on: frozenset[int] = frozenset()  # the listeners its epoll watches with EPOLLEXCLUSIVE (last: positional)
    # its poll or select set was read from memory and names the listeners: what it waits on is seen, not assumed
    set_read: bool = False

    @property
    def unit(self) -> tuple[int, int]:
        return (self.pid, self.tid)


@dataclass(frozen=True)
class Listener:
    inode: int
    address: str
    port: int


@dataclass(frozen=True)
class Verdict:
    """One sample's answer: the mechanism (None: no thread waited on a listener), who waits on the
    listeners, who is fed by an acceptor, who waits without the listener while holding it (lock losers),
    and why."""

    mechanism: str | None
    waiters: tuple[tuple[int, int], ...]
    fed: tuple[tuple[int, int], ...] = ()
    losers: tuple[tuple[int, int], ...] = ()
    evidence: tuple[str, ...] = ()
    # the workers' siblings that hold a listener and wait in something else: busy with a connection (an Apache
    # prefork child polling its kept connection for the next request), not waiting for a new one
    busy: tuple[tuple[int, int], ...] = ()
    exclusive: bool = True  # False: epoll waiters whose epoll watches the listener without EPOLLEXCLUSIVE
    elsewhere: tuple[str, ...] = ()  # ports served by another mechanism (other_listeners.served_otherwise)
