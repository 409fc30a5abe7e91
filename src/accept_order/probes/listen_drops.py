"""Which of a server's listeners' dropped packets were listen drops (a full queue's).

A listener's sk_drops (`ss -ltm`'s d) counts each handshake packet it drops (tcp_listendrop, which ListenDrops counts
over the whole network namespace too), and also each handshake-ending ACK a TCP_DEFER_ACCEPT listener throws away
while the connection waits for its first data (uWSGI's and Apache's: one a connection; the namespace's
TCPDeferAcceptDrop counts those). So the listeners' growth L, the namespace's ListenDrops growth N and its
TCPDeferAcceptDrop growth D bound the server's own listen drops: at least L - D, at most min(L, N). Neither bound is
the count on a busy host: another program's listener dropping makes N too large, another's deferring D. Whether the
server's own listeners defer is read from them (pidfd_getfd, then getsockopt): where none does, L is the count.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Collection, Iterable, Sequence
from typing import NamedTuple

from ..core.libc import libc
from .netstat import parse_netstat

__all__ = ["DropsReading", "NamespaceDrops", "defers_accept", "dropped_between", "namespace_drops", "summed"]

SYS_PIDFD_GETFD = 438  # the same number on every architecture Linux numbers alike since 5.1


class NamespaceDrops(NamedTuple):
    """A network namespace's ListenDrops and TCPDeferAcceptDrop, read at once."""

    listen: int
    deferred: int


class DropsReading(NamedTuple):
    """The server's listeners' sk_drops summed, their namespace's counters read just before and just after them (the
    namespace's window holds the listeners': a drop between the two reads counts in both growths or in neither), and
    whether any of those listeners defers accept (None: not read)."""

    listeners: int
    namespace: NamespaceDrops | None = None
    namespace_after: NamespaceDrops | None = None
    defers: bool | None = None


def namespace_drops() -> NamespaceDrops | None:
    """This thread's network namespace's counters (thread-self: after setns, the server's); None if unread."""
    try:
        with open("/proc/thread-self/net/netstat", encoding="ascii") as f:
            counters = parse_netstat(f.read())
    except (OSError, ValueError):
        return None
    listen, deferred = counters.get("TcpExtListenDrops"), counters.get("TcpExtTCPDeferAcceptDrop")
    return None if listen is None or deferred is None else NamespaceDrops(listen, deferred)


def defers_accept(inodes: Collection[int], pids: Sequence[int]) -> bool | None:
    """Whether any listener of these socket inodes, found in these processes' fd tables, has TCP_DEFER_ACCEPT set;
    None where one of them is found in none or cannot be read (another user's process, no pidfd_getfd)."""
    left, deferring = set(inodes), False
    for pid in pids:
        for fd, inode in _sockets_of(pid):
            if inode in left:
                defers = _defers(pid, fd, inode)
                if defers is None:
                    return None
                left.discard(inode)
                deferring = deferring or defers
                if not left:  # a worker's fd table may hold thousands of connections besides
                    return deferring
    return None


def _sockets_of(pid: int) -> Iterable[tuple[int, int]]:
    """(fd, inode) of each socket in the process's fd table."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return
    for name in names:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if link.startswith("socket:["):
            yield int(name), int(link[8:-1])


def _defers(pid: int, fd: int, inode: int) -> bool | None:
    """The listener's TCP_DEFER_ACCEPT, read on a copy of its descriptor (closing the copy leaves it listening); None
    where the descriptor is no longer that socket (closed meanwhile, its number taken by another file)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None
    try:
        copy = int(libc().syscall(SYS_PIDFD_GETFD, pidfd, fd, 0))
    finally:
        os.close(pidfd)
    if copy < 0:
        return None
    try:
        status = os.fstat(copy)
        if not stat.S_ISSOCK(status.st_mode) or status.st_ino != inode:
            raise OSError("not that socket")
        listener = socket.socket(fileno=copy)
    except OSError:
        os.close(copy)
        return None
    with listener:
        try:
            return listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT) > 0
        except OSError:
            return None


def summed(readings: Iterable[DropsReading | None]) -> DropsReading | None:
    """Several ports' readings as one (the namespace's counters: the first read before, the last read after)."""
    kept = list(readings)
    if not kept or any(r is None for r in kept):
        return None
    every = [r for r in kept if r is not None]
    defers = [r.defers for r in every]
    return DropsReading(
        sum(r.listeners for r in every),
        every[0].namespace,
        every[-1].namespace_after,
        True if True in defers else None if None in defers else False,
    )


def dropped_between(before: int | DropsReading | None, after: int | DropsReading | None) -> int | None:
    """The server's own listen drops between two readings; None where either is missing or the count went back (a
    listener closed, or replaced). No more than the namespace's ListenDrops grew: a segment ending a handshake that
    finds the queue full counts once there and twice in sk_drops (tcp_listendrop, then discard_and_relse: a
    TCP_DEFER_ACCEPT backlog-1 listener's 3 deferred ACKs and 1 overflow read sk_drops +5, ListenDrops +1). Where
    its listeners defer accept, less the namespace's deferred ACKs too: 'ramp --server uwsgi' beside another
    program's listener dropping 56 SYNs said 'the server's listeners dropped 56 handshake packets' of a uWSGI whose
    drops were its 400 deferred ACKs (L 400, N 56, D 400). Not known whether they defer, the count where the two
    bounds agree; None where they defer (or may) and the namespace's counters are unread."""
    if before is None or after is None:
        return None
    first, last = (r.listeners if isinstance(r, DropsReading) else r for r in (before, after))
    if last < first:
        return None
    dropped = last - first
    if not (isinstance(before, DropsReading) and isinstance(after, DropsReading)):
        return dropped
    defers = None if None in (before.defers, after.defers) else before.defers or after.defers
    start, end = before.namespace, after.namespace_after
    if start is None or end is None or end.listen < start.listen or end.deferred < start.deferred:
        return dropped if defers is False else None
    at_most = min(dropped, end.listen - start.listen)
    if defers is False:
        return at_most  # no ACK of theirs deferred: only an overflow's second count to take off
    at_least = max(0, dropped - (end.deferred - start.deferred))
    if defers:
        return min(at_least, at_most)  # its own deferred ACKs are among D: exact where no other listener deferred
    return at_most if at_least >= at_most else None  # not known whether they defer: where the bounds agree
