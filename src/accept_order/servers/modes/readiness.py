"""Modes that wait for readiness on one shared socket, each worker with its own wait: epoll with and
without EPOLLEXCLUSIVE, poll() and select(). The last three are the thundering herd."""

from __future__ import annotations

import select
import socket

from ...core.models import Model
from .base import Listeners, Mode, ReadinessWaiter, Waiter, epoll_missing, epoll_waiter


class PollWaiter(ReadinessWaiter):
    """poll() over the listener, and the kept connections beside it."""

    def __init__(self, sock: socket.socket, batch: int) -> None:
        self.poller = select.poll()
        self.poller.register(sock.fileno(), select.POLLIN)
        super().__init__(sock, self.poller.poll, batch)

    def watch(self, conn: socket.socket) -> None:
        self.poller.register(conn.fileno(), select.POLLIN)

    def unwatch(self, conn: socket.socket) -> None:
        self.poller.unregister(conn.fileno())

    def wait_kept(self) -> tuple[list[socket.socket], list[int]]:
        listener = self.sock.fileno()
        ready = [fd for fd, _ in self.poller.poll()]
        return (self.accept_ready() if listener in ready else []), [fd for fd in ready if fd != listener]


class SelectWaiter(ReadinessWaiter):
    """select() over the listener, and the kept connections beside it."""

    def __init__(self, sock: socket.socket, batch: int) -> None:
        self.fds = [sock.fileno()]
        super().__init__(sock, lambda: select.select(self.fds, [], []), batch)

    def watch(self, conn: socket.socket) -> None:
        self.fds.append(conn.fileno())

    def unwatch(self, conn: socket.socket) -> None:
        self.fds.remove(conn.fileno())

    def wait_kept(self) -> tuple[list[socket.socket], list[int]]:
        listener = self.sock.fileno()
        ready, _, _ = select.select(self.fds, [], [])
        return (self.accept_ready() if listener in ready else []), [fd for fd in ready if fd != listener]


def _epollexclusive_missing() -> str | None:
    if not hasattr(select, "epoll"):
        return "epoll is Linux-only"
    flag = getattr(select, "EPOLLEXCLUSIVE", None)
    if flag is None:
        return "this Python has no select.EPOLLEXCLUSIVE"
    # The flag exists in Python everywhere it builds; the kernel (4.5+) must accept it too.
    probe = socket.socket()
    ep = select.epoll()
    try:
        ep.register(probe.fileno(), select.EPOLLIN | flag)
    except OSError as exc:
        return f"the kernel refuses EPOLLEXCLUSIVE ({exc.strerror})"
    finally:
        ep.close()
        probe.close()
    return None


class EpollExclusiveMode(Mode):
    name = "epoll"
    summary = "shared socket, one epoll per worker with EPOLLEXCLUSIVE, nonblocking accept"
    why = (
        "each worker's epoll adds one exclusive wait entry to the socket at epoll_ctl time and it never "
        "moves; a wakeup walks the queue from the head and stops at the first epoll with a waiter, so the "
        "first-registered idle worker wins"
    )
    model = Model.FIRST_REGISTERED

    def unavailable(self) -> str | None:
        return _epollexclusive_missing()

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return epoll_waiter(listeners.for_worker(index), select.EPOLLIN | select.EPOLLEXCLUSIVE, batch)


class EpollHerdMode(Mode):
    name = "epoll-herd"
    summary = "shared socket, one epoll per worker without EPOLLEXCLUSIVE"
    why = (
        "without EPOLLEXCLUSIVE every epoll's wait entry is non-exclusive, so one connection wakes every "
        "idle worker; one accepts, the kernel rechecks readiness for the rest and most go back to sleep"
    )
    model = None
    herds = True

    def unavailable(self) -> str | None:
        return epoll_missing()

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return epoll_waiter(listeners.for_worker(index), select.EPOLLIN, batch)


class PollMode(Mode):
    name = "poll"
    summary = "shared socket, poll() in every worker, nonblocking accept"
    why = (
        "poll() puts a non-exclusive wait entry on the socket for every waiting worker, so one connection "
        "wakes all idle workers (a thundering herd)"
    )
    model = None
    herds = True

    def unavailable(self) -> str | None:
        return None if hasattr(select, "poll") else "this platform has no poll()"

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return PollWaiter(listeners.for_worker(index), batch)


class SelectMode(Mode):
    name = "select"
    summary = "shared socket, select() in every worker, nonblocking accept"
    why = (
        "select() puts a non-exclusive wait entry on the socket for every waiting worker, so one "
        "connection wakes all idle workers (a thundering herd)"
    )
    model = None
    herds = True

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return SelectWaiter(listeners.for_worker(index), batch)
