"""`reuseport`: one SO_REUSEPORT listener per worker; the kernel picks a queue by hashing the 4-tuple."""

from __future__ import annotations

import errno
import select
import socket
from typing import ClassVar

from ...core.errors import ListenError
from ...core.models import Mechanism, Model
from .base import (
    DEFAULT_OPTIONS,
    TAKEN_PORT_HINT,
    Listeners,
    Mode,
    ModeOptions,
    Waiter,
    epoll_waiter,
    listen_socket,
    listener_owner,
)

REUSEPORT_WOULD = "reuseport listeners would join its group and share its connections"


def refuse_foreign_group(host: str, port: int, would: str = REUSEPORT_WOULD) -> None:
    """A fixed port where another process already listens with SO_REUSEPORT would let our listeners join
    its group silently, and its queues would take a share of our connections (and we of its). A plain
    bind with SO_REUSEADDR only (no SO_REUSEPORT) fails on any listener there and passes TIME_WAIT.
    `would`: what the error says would happen otherwise."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ListenError(
                    f"port {port} on {host} already has a listener ({listener_owner(host, port)}); {would}: "
                    + TAKEN_PORT_HINT
                ) from None


class ReuseportMode(Mode):
    name = "reuseport"
    summary = "one SO_REUSEPORT listener per worker, each worker waits on its own socket with epoll"
    why = (
        "with SO_REUSEPORT each worker has its own accept queue and the kernel picks the queue by a hash "
        "of the connection's 4-tuple, whether or not that worker is busy"
    )
    model: ClassVar[Model | None] = Model.HASH
    queue = "per-worker"

    def unavailable(self) -> str | None:
        if not hasattr(socket, "SO_REUSEPORT"):
            return "this platform has no SO_REUSEPORT"
        if not hasattr(select, "epoll"):
            return "this mode waits with epoll, which is Linux-only"
        return None

    def open(
        self, host: str, port: int, backlog: int, workers: int, options: ModeOptions = DEFAULT_OPTIONS
    ) -> Listeners:
        if port:
            refuse_foreign_group(host, port)
        sockets: list[socket.socket] = []
        try:
            for _ in range(workers):
                sock = listen_socket(host, port, backlog, reuseport=True)
                sock.setblocking(False)
                sockets.append(sock)
                port = sock.getsockname()[1]  # the first socket picks the ephemeral port; the rest join it
        except BaseException:
            for sock in sockets:
                sock.close()
            raise
        return Listeners(sockets, port, per_worker=True)

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        return epoll_waiter(listeners.for_worker(index), select.EPOLLIN, batch)


class SteeredReuseportMode(ReuseportMode):
    """Reuseport listeners with something applied to them that decides the listener instead of the hash
    (a BPF program, an incoming-CPU mark). Subclasses say what: `steer(index, sock)`; it is tried on a
    probe socket to tell whether this kernel has it."""

    #: what the kernel must accept, named in the "not available" reason
    needs: ClassVar[str]
    #: /proc shows the sockets of a reuseport group, not what steers it (a BPF program, SO_INCOMING_CPU)
    seen_as = Mechanism.REUSEPORT

    def steer(self, index: int, sock: socket.socket) -> None:
        raise NotImplementedError

    def unavailable(self) -> str | None:
        reason = super().unavailable()
        if reason:
            return reason
        with socket.socket() as probe:
            try:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                probe.bind(("127.0.0.1", 0))
                self.steer(0, probe)
            except OSError as exc:
                return f"the kernel refuses {self.needs} ({exc.strerror})"
        return None

    def open(
        self, host: str, port: int, backlog: int, workers: int, options: ModeOptions = DEFAULT_OPTIONS
    ) -> Listeners:
        listeners = super().open(host, port, backlog, workers, options)
        try:
            for index, sock in enumerate(listeners.sockets):
                self.steer(index, sock)
        except BaseException:
            listeners.close()
            raise
        return listeners
