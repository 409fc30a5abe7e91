"""What every accept mode is made of: listening sockets the parent opens, and a waiter per worker.

The parent calls `Mode.open()` before any worker starts (so shared sockets and a shared epoll are
inherited over fork); each worker calls `Mode.waiter()` once, in index order, before it reports ready (so
registration order is worker order). A mode also says what the kernel mechanism predicts (its metadata),
so that analysis, reports and experiments never look at a mode's name.
"""

from __future__ import annotations

import errno
import os
import select
import socket
from collections.abc import Callable
from typing import Any, ClassVar, Literal, NamedTuple, Protocol

from ...core.errors import ListenError
from ...core.kinds import ModeInfo
from ...core.models import Mechanism, Model

Queue = Literal["shared", "per-worker"]


class ModeOptions(NamedTuple):
    """Settings only some modes read: fd-pass's dispatch policy, accept-mutex's retry delay. (A NamedTuple: the
    same to its callers as a frozen dataclass, without compiling one's methods at start-up.)"""

    policy: str = "round-robin"
    mutex_delay_ms: float = 500.0  # nginx's accept_mutex_delay default


DEFAULT_OPTIONS = ModeOptions()


class Helper(Protocol):
    """A mode's own process besides the workers: runs until SIGTERM, then reports what it did."""

    def run(self) -> None: ...

    def report(self) -> dict[str, Any]: ...


class Listeners:
    """Sockets (and a shared epoll, for epoll-shared) the parent made before the workers start. A plain class:
    sockets are never compared, printed or stored, and a dataclass's methods cost every start-up their compile
    (Python 3.11; issue 30)."""

    def __init__(
        self,
        sockets: list[socket.socket],
        port: int,
        shared_epoll: select.epoll | None = None,
        per_worker: bool = False,
    ) -> None:
        self.sockets = sockets
        self.port = port
        self.shared_epoll = shared_epoll
        self.per_worker = per_worker

    def for_worker(self, index: int) -> socket.socket:
        return self.sockets[index] if self.per_worker else self.sockets[0]

    def keep_only(self, index: int) -> None:
        """In a worker: close the other workers' reuseport sockets, so each queue has one reader."""
        if self.per_worker:
            for i, sock in enumerate(self.sockets):
                if i != index:
                    sock.close()

    def acceptor(self) -> Callable[[], Helper] | None:
        """For a mode with a process of its own besides the workers (fd-pass's acceptor): the factory of
        what it runs, called in a child the pool starts after the workers. None: the workers are all."""
        return None

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        if self.shared_epoll is not None:
            self.shared_epoll.close()


MAX_EVENTS = 64  # events one wait returns while it watches kept connections beside the listener


class Waiter:
    """A worker's view of its accept mode: `wait()` blocks until a wakeup and returns what it accepted.

    An empty list is an empty wakeup: woken, but another worker took the connection (EAGAIN).

    Kept connections (ServerSpec.keepalive: several requests each): a mode whose `Mode.multiplexes` waits on
    them in the same wait as on its listener, as nginx does: `watch` adds one, `wait_kept` returns what it
    accepted and the descriptors of the kept connections that have something to read, `rearm` after one was
    read (a one-shot watch is armed again), `unwatch` before it is closed.
    """

    sock: socket.socket

    def wait(self) -> list[socket.socket]:
        raise NotImplementedError

    def watch(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def unwatch(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def rearm(self, conn: socket.socket) -> None:
        """After `conn` was read: its watch is level-triggered and stays (epoll, poll, select)."""

    def wait_kept(self) -> tuple[list[socket.socket], list[int]]:
        raise NotImplementedError

    def leave(self) -> list[socket.socket]:
        """Stop accepting, the way a graceful restart does: close this worker's listener and return the
        connections already handed to it (none, unless something queued them for this worker alone)."""
        self.sock.close()
        return []


class ReadinessWaiter(Waiter):
    """Wait for readiness (epoll/poll/select), then accept nonblocking until EAGAIN or the batch cap."""

    def __init__(self, sock: socket.socket, block: Callable[[], object], batch: int) -> None:
        self.sock = sock
        self.block = block
        self.batch = batch  # 0: no cap

    def wait(self) -> list[socket.socket]:
        self.block()
        return self.accept_ready()

    def accept_ready(self) -> list[socket.socket]:
        """Accept what the listener holds, up to the batch cap (it was found ready)."""
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


def listener_owner(host: str, port: int) -> str:
    """Who listens on `port` (for an error message): "pid 123 (nginx)", or "another process". Of several
    processes holding the listener, the last in /proc's order, as psutil.net_connections named it: /proc is
    read from its end and the search stops at the first holder, where net_connections read every descriptor
    of every process (68,000 on this machine while the suite ran: 1.5 s of CPU for one error line)."""
    links = _listening_sockets(port)
    pid = _last_holder(links) if links else None
    if pid is None:
        return "another process"
    import psutil  # only for this message: it costs 10 ms to import

    try:
        name = psutil.Process(pid).name()  # the process's name as psutil spells it (a long name from its argv)
    except psutil.Error:
        name = "?"
    return f"pid {pid} ({name})"


def _listening_sockets(port: int) -> set[str]:
    """The fd link targets ("socket:[INODE]") of the TCP sockets listening on `port`, any address."""
    links = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as rows:
                next(rows, None)  # the header
                for row in rows:
                    # sl local_address rem_address st ... inode: the address is HEXADDR:HEXPORT, st 0A is LISTEN
                    fields = row.split()
                    if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rpartition(":")[2], 16) == port:
                        links.add(f"socket:[{fields[9]}]")
        except (OSError, ValueError):
            continue  # no IPv6 here, or not Linux
    return links


def _last_holder(links: set[str]) -> int | None:
    """The last process in /proc's order with one of `links` in its fd table (None: none this user sees)."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in reversed(pids):
        fds = f"/proc/{pid}/fd"
        try:
            names = os.listdir(fds)
        except OSError:  # ended meanwhile, or not ours to look into
            continue
        for fd in names:
            try:
                if os.readlink(f"{fds}/{fd}") in links:
                    return int(pid)
            except OSError:
                continue
    return None


# What to do about a port another process listens on: the error names who holds it, and this says the way out
# (without it, 'run --server nginx --port 8080' beside a running nginx left a newcomer to guess).
TAKEN_PORT_HINT = "give another --port, or leave it out for a free one"


UNPRIVILEGED_PORT_START = "/proc/sys/net/ipv4/ip_unprivileged_port_start"


def unprivileged_start() -> int:
    """The lowest port anyone may listen on (net.ipv4.ip_unprivileged_port_start, this network namespace's)."""
    try:
        with open(UNPRIVILEGED_PORT_START, encoding="ascii") as setting:
            return int(setting.read())
    except (OSError, ValueError):
        return 1024  # the kernel's default, and all there was before Linux 4.11 made it a setting


def below_start_refused(host: str, port: int) -> str | None:
    """The line for a port the kernel refuses this process before it binds: below the start without
    CAP_NET_BIND_SERVICE (a user, or a container's root whose capabilities were dropped, whom 'run as root' sent
    nowhere); None where a bind may pass. A server this tool starts is refused so before it runs: 'run --server
    nginx --port 80' as a user read nginx's own 'bind() to 127.0.0.1:80 failed (13: Permission denied)'."""
    from ...core.capabilities import NET_BIND_SERVICE, holds

    start = unprivileged_start()
    if port >= start or holds(NET_BIND_SERVICE):
        return None
    refused = f"not allowed to listen on {host} port {port}: ports below {start}"
    if os.geteuid() == 0:
        return (
            f"{refused} need {NET_BIND_SERVICE.name} (net.ipv4.ip_unprivileged_port_start), which this root lacks "
            f"(its capabilities were dropped): give --port {start} or above"
        )
    return f"{refused} are root's (net.ipv4.ip_unprivileged_port_start): give --port {start} or above, or run as root"


def not_allowed(host: str, port: int) -> str:
    """Why the kernel refused the bind and the way out ('serve --port 80' as a user read '... (privileged port?)').
    A root of `unshare -Ur` holds CAP_NET_BIND_SERVICE for its own user namespace only, not for the network
    namespace it binds in."""
    from ...core.capabilities import NET_BIND_SERVICE, in_user_namespace

    if (said := below_start_refused(host, port)) is not None:
        return said
    start = unprivileged_start()
    refused = f"not allowed to listen on {host} port {port}"
    if port >= start:
        return f"{refused}, though ports from {start} are anyone's: {NET_BIND_SERVICE.kept}"
    if in_user_namespace():
        return (
            f"{refused}: ports below {start} need {NET_BIND_SERVICE.name} (net.ipv4.ip_unprivileged_port_start), "
            f"which this process holds in a user namespace of its own only: give --port {start} or above"
        )
    return f"{refused}, though this process holds {NET_BIND_SERVICE.name}: {NET_BIND_SERVICE.kept}"


def listen_socket(host: str, port: int, backlog: int, reuseport: bool) -> socket.socket:
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
            raise ListenError(
                f"port {port} on {host} is already in use by {listener_owner(host, port)}: {TAKEN_PORT_HINT}"
            ) from None
        if exc.errno == errno.EACCES:
            raise ListenError(not_allowed(host, port)) from None
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            raise ListenError(f"cannot listen on {host}: address not available on this machine") from None
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            raise ListenError(f"cannot listen on {host} port {port}: {exc.strerror} (check `ulimit -n`)") from None
        raise ListenError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    return sock


class Mode:
    """Base strategy: one shared listening socket. Subclasses set the metadata and `waiter()`."""

    name: ClassVar[str]
    summary: ClassVar[str]
    why: ClassVar[str]
    #: The order the kernel mechanism predicts (core/models.py); None: no order.
    model: ClassVar[Model | None]
    queue: ClassVar[Queue] = "shared"  # one accept queue for all workers, or one per worker
    #: Kept connections (several requests each) wait in the worker's own wait beside the listener (True: an
    #: event-driven worker, as nginx's), or each is served to its end before the next accept (False: a worker
    #: whose wait is the accept itself, as Apache prefork's; the mode says why in a comment).
    multiplexes: ClassVar[bool] = True
    herds: ClassVar[bool] = False  # one connection wakes every idle worker (a thundering herd)
    batches: ClassVar[bool] = True  # --accept-batch applies (a blocking accept() takes one per call)
    nonblocking: ClassVar[bool] = True
    #: its empty wakeups include its own timer's (accept-mutex's retry delay): those are not a herd
    timed_waits: ClassVar[bool] = False
    #: the mode `inspect` names from /proc when it cannot tell this one apart (ModeInfo.seen_as)
    seen_as: ClassVar[Mechanism | None] = None
    #: the dispatch discipline the latency model simulates where `queue` and `model` cannot say it
    #: (ModeInfo.discipline: analysis/queueing.py's names)
    discipline: ClassVar[str | None] = None

    @classmethod
    def info(cls) -> ModeInfo:
        """This mode's metadata, in the type every server kind's modes share. The built-in workers read
        nothing after accepting, so a worker's sleep is a wakeup for a connection."""
        return ModeInfo(
            cls.name,
            cls.summary,
            cls.why,
            cls.model,
            cls.queue,
            herds=cls.herds,
            batches=cls.batches,
            switches_are_wakeups=True,
            timed_waits=cls.timed_waits,
            settings=(f"--mode {cls.name}",),
            multiplexes=cls.multiplexes,
            seen_as=cls.seen_as,
            discipline=cls.discipline,
        )

    def unavailable(self) -> str | None:
        """Why this platform cannot run the mode, or None."""
        return None

    def open(
        self, host: str, port: int, backlog: int, workers: int, options: ModeOptions = DEFAULT_OPTIONS
    ) -> Listeners:
        sock = listen_socket(host, port, backlog, reuseport=False)
        sock.setblocking(not self.nonblocking)
        return Listeners([sock], sock.getsockname()[1])

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        raise NotImplementedError


class EpollWaiter(ReadinessWaiter):
    """The worker's own epoll: the listener (with the mode's flags), and its kept connections beside it."""

    def __init__(self, sock: socket.socket, ep: select.epoll, batch: int) -> None:
        super().__init__(sock, lambda: ep.poll(-1, 1), batch)
        self.ep = ep

    def watch(self, conn: socket.socket) -> None:
        self.ep.register(conn.fileno(), select.EPOLLIN)

    def unwatch(self, conn: socket.socket) -> None:
        self.ep.unregister(conn.fileno())

    def wait_kept(self) -> tuple[list[socket.socket], list[int]]:
        listener = self.sock.fileno()
        ready = [fd for fd, _ in self.ep.poll(-1, MAX_EVENTS)]
        accepted = self.accept_ready() if listener in ready else []
        return accepted, [fd for fd in ready if fd != listener]


def epoll_waiter(sock: socket.socket, flags: int, batch: int) -> EpollWaiter:
    ep = select.epoll()
    ep.register(sock.fileno(), flags)
    return EpollWaiter(sock, ep, batch)


def epoll_missing() -> str | None:
    return None if hasattr(select, "epoll") else "epoll is Linux-only"
