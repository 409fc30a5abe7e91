"""One small strategy per accept mode: what it needs, how the listeners are set up, how a worker waits.

Adding a mode means adding one class here and listing it in MODES. The parent calls `open()` before any
worker starts (so shared sockets and a shared epoll are inherited over fork); each worker calls
`waiter()` once, in index order, before it reports ready (so registration order is worker order).
"""

from __future__ import annotations

import errno
import select
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from .errors import ListenError, ModeUnavailable, PlanError


@dataclass
class Listeners:
    """Sockets (and a shared epoll, for epoll-shared) the parent made before the workers start."""

    sockets: list[socket.socket]
    port: int
    shared_epoll: select.epoll | None = None
    per_worker: bool = False

    def for_worker(self, index: int) -> socket.socket:
        return self.sockets[index] if self.per_worker else self.sockets[0]

    def keep_only(self, index: int) -> None:
        """In a worker: close the other workers' reuseport sockets, so each queue has one reader."""
        if self.per_worker:
            for i, sock in enumerate(self.sockets):
                if i != index:
                    sock.close()

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        if self.shared_epoll is not None:
            self.shared_epoll.close()


class Waiter:
    """A worker's view of its accept mode: `wait()` blocks until a wakeup and returns what it accepted.

    An empty list is an empty wakeup: woken, but another worker took the connection (EAGAIN).
    """

    def wait(self) -> list[socket.socket]:
        raise NotImplementedError


class BlockingWaiter(Waiter):
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def wait(self) -> list[socket.socket]:
        conn, _ = self.sock.accept()
        return [conn]


class ReadinessWaiter(Waiter):
    """Wait for readiness (epoll/poll/select), then accept nonblocking until EAGAIN or the batch cap."""

    def __init__(self, sock: socket.socket, block: Callable[[], object], batch: int) -> None:
        self.sock = sock
        self.block = block
        self.batch = batch  # 0: no cap

    def wait(self) -> list[socket.socket]:
        self.block()
        accepted: list[socket.socket] = []
        while not self.batch or len(accepted) < self.batch:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                break
            except OSError as exc:
                # A connection reset while queued is the client's problem, not a reason to stop serving.
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue
                # Out of file descriptors: serve what this wakeup took; the rest stay queued for later.
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM) and accepted:
                    break
                raise
            conn.setblocking(True)
            accepted.append(conn)
        return accepted


def _listen_socket(host: str, port: int, backlog: int, reuseport: bool) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuseport:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ListenError(f"port {port} on {host} is already in use") from None
        if exc.errno == errno.EACCES:
            raise ListenError(f"not allowed to listen on {host} port {port} (privileged port?)") from None
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            raise ListenError(f"cannot listen on {host}: address not available on this machine") from None
        raise ListenError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    return sock


class Mode:
    """Base strategy: one shared listening socket."""

    name: ClassVar[str]
    summary: ClassVar[str]
    why: ClassVar[str]
    model: ClassVar[str | None]  # which idle-order model the kernel mechanism predicts (analysis.MODELS)
    nonblocking: ClassVar[bool] = True
    wakes_all: ClassVar[bool] = False  # one connection wakes every idle worker (a thundering herd)

    def unavailable(self) -> str | None:
        """Why this platform cannot run the mode, or None."""
        return None

    def open(self, host: str, port: int, backlog: int, workers: int) -> Listeners:
        sock = _listen_socket(host, port, backlog, reuseport=False)
        sock.setblocking(not self.nonblocking)
        return Listeners([sock], sock.getsockname()[1])

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        raise NotImplementedError


class BlockingMode(Mode):
    name = "blocking"
    summary = "shared socket, every worker blocks in accept()"
    why = (
        "accept() queues blocked workers FIFO: prepare_to_wait_exclusive adds each at the tail of the "
        "socket's wait queue and a connection wakes the head, so idle workers take turns"
    )
    model = "fifo"
    nonblocking = False

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return BlockingWaiter(listeners.for_worker(index))


def _epoll_waiter(sock: socket.socket, flags: int, batch: int) -> ReadinessWaiter:
    ep = select.epoll()
    ep.register(sock.fileno(), flags)
    return ReadinessWaiter(sock, lambda: ep.poll(-1, 1), batch)


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
    model = "first-registered"

    def unavailable(self) -> str | None:
        return _epollexclusive_missing()

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return _epoll_waiter(listeners.for_worker(index), select.EPOLLIN | select.EPOLLEXCLUSIVE, batch)


class EpollSharedMode(Mode):
    name = "epoll-shared"
    summary = "shared socket, one epoll instance shared by all workers"
    why = (
        "all workers sleep on the one epoll's wait queue, where epoll_wait adds each waiter at the head "
        "(__add_wait_queue_exclusive), so the most recent waiter is woken: LIFO"
    )
    model = "lifo"

    def unavailable(self) -> str | None:
        return None if hasattr(select, "epoll") else "epoll is Linux-only"

    def open(self, host: str, port: int, backlog: int, workers: int) -> Listeners:
        listeners = super().open(host, port, backlog, workers)
        listeners.shared_epoll = select.epoll()
        # Edge-triggered: a level-triggered item is put back on the ready list after each epoll_wait,
        # which wakes a second waiter and blurs the LIFO order this mode is here to show.
        listeners.shared_epoll.register(listeners.sockets[0].fileno(), select.EPOLLIN | select.EPOLLET)
        return listeners

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        ep = listeners.shared_epoll
        assert ep is not None
        return ReadinessWaiter(listeners.for_worker(index), lambda: ep.poll(-1, 1), batch)


class EpollHerdMode(Mode):
    name = "epoll-herd"
    summary = "shared socket, one epoll per worker without EPOLLEXCLUSIVE"
    why = (
        "without EPOLLEXCLUSIVE every epoll's wait entry is non-exclusive, so one connection wakes every "
        "idle worker; one accepts, the kernel rechecks readiness for the rest and most go back to sleep"
    )
    model = None
    wakes_all = True

    def unavailable(self) -> str | None:
        return None if hasattr(select, "epoll") else "epoll is Linux-only"

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return _epoll_waiter(listeners.for_worker(index), select.EPOLLIN, batch)


class PollMode(Mode):
    name = "poll"
    summary = "shared socket, poll() in every worker, nonblocking accept"
    why = (
        "poll() puts a non-exclusive wait entry on the socket for every waiting worker, so one connection "
        "wakes all idle workers (a thundering herd)"
    )
    model = None
    wakes_all = True

    def unavailable(self) -> str | None:
        return None if hasattr(select, "poll") else "this platform has no poll()"

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        sock = listeners.for_worker(index)
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return ReadinessWaiter(sock, poller.poll, batch)


class SelectMode(Mode):
    name = "select"
    summary = "shared socket, select() in every worker, nonblocking accept"
    why = (
        "select() puts a non-exclusive wait entry on the socket for every waiting worker, so one "
        "connection wakes all idle workers (a thundering herd)"
    )
    model = None
    wakes_all = True

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        sock = listeners.for_worker(index)
        fds = [sock.fileno()]
        return ReadinessWaiter(sock, lambda: select.select(fds, [], []), batch)


class ReuseportMode(Mode):
    name = "reuseport"
    summary = "one SO_REUSEPORT listener per worker, each worker waits on its own socket with epoll"
    why = (
        "with SO_REUSEPORT each worker has its own accept queue and the kernel picks the queue by a hash "
        "of the connection's 4-tuple, whether or not that worker is busy"
    )
    model = "hash"

    def unavailable(self) -> str | None:
        if not hasattr(socket, "SO_REUSEPORT"):
            return "this platform has no SO_REUSEPORT"
        if not hasattr(select, "epoll"):
            return "this mode waits with epoll, which is Linux-only"
        return None

    def open(self, host: str, port: int, backlog: int, workers: int) -> Listeners:
        sockets: list[socket.socket] = []
        try:
            for _ in range(workers):
                sock = _listen_socket(host, port, backlog, reuseport=True)
                sock.setblocking(False)
                sockets.append(sock)
                port = sock.getsockname()[1]  # the first socket picks the ephemeral port; the rest join it
        except BaseException:
            for sock in sockets:
                sock.close()
            raise
        return Listeners(sockets, port, per_worker=True)

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return _epoll_waiter(listeners.for_worker(index), select.EPOLLIN, batch)


MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        BlockingMode(),
        EpollExclusiveMode(),
        EpollSharedMode(),
        EpollHerdMode(),
        PollMode(),
        SelectMode(),
        ReuseportMode(),
    )
}
# The modes `compare` runs; poll and select are herd variants shown by `herd`.
CORE_MODES = ("blocking", "epoll", "epoll-shared", "epoll-herd", "reuseport")


def get_mode(name: str) -> Mode:
    try:
        return MODES[name]
    except KeyError:
        raise PlanError(f"unknown mode {name!r}; choose one of: {', '.join(MODES)}") from None


def require_mode(name: str) -> Mode:
    """The mode, or ModeUnavailable saying what this platform lacks."""
    mode = get_mode(name)
    reason = mode.unavailable()
    if reason:
        raise ModeUnavailable(f"mode {name!r} is not available here: {reason}")
    return mode


def parse_modes(text: str) -> list[str]:
    """`"blocking, reuseport"` -> names; PlanError for unknown or no modes."""
    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODES]
    if unknown or not names:
        raise PlanError(
            f"unknown mode(s): {', '.join(unknown) or '(none given)'}; choose from {', '.join(MODES)}"
        )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise PlanError(f"mode(s) given more than once: {', '.join(repeated)}")
    return names


def split_available(names: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """(modes this machine can run, {mode: why not} for the rest); PlanError for an unknown name."""
    available: list[str] = []
    skipped: dict[str, str] = {}
    for name in names:
        reason = get_mode(name).unavailable()
        if reason:
            skipped[name] = reason
        else:
            available.append(name)
    return available, skipped


def available_modes(names: tuple[str, ...] | list[str] = CORE_MODES) -> list[str]:
    return [n for n in names if MODES[n].unavailable() is None]


@dataclass(frozen=True)
class ModeInfo:
    name: str
    summary: str
    unavailable: str | None = field(default=None)


def describe_modes() -> list[ModeInfo]:
    return [ModeInfo(m.name, m.summary, m.unavailable()) for m in MODES.values()]
