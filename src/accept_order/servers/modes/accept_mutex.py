"""`accept-mutex`: nginx's accept_mutex, rebuilt: only the worker holding a lock in shared memory listens.

nginx (ngx_trylock_accept_mutex, ngx_event_accept.c): before each epoll_wait a worker tries the lock without
blocking. The holder adds the listener to its epoll and waits as long as it likes; the others take the
listener out of theirs and wait at most accept_mutex_delay (500 ms) before trying again. The holder releases
the lock once it has accepted, before it serves, and tries again when it comes back. An idle server's
holder is back long before anyone's delay is up, so it keeps the lock, and with it every connection.

The lock is a POSIX record lock (lockf) on a file every worker inherits, which is what nginx uses where it
has no atomics (ngx_shmtx on a lock file): the kernel takes the lock back from a worker that dies holding
it, so a SIGKILLed holder never stops the others (nginx's master has to force-unlock its shared-memory
lock for that, ngx_shmtx_force_unlock).
"""

from __future__ import annotations

import errno
import fcntl
import select
import socket
import tempfile
from dataclasses import dataclass
from typing import Any

from ...core.kinds import KindOption
from ...core.models import Model
from ...core.spec import MAX_GAP_MS
from .base import (
    DEFAULT_OPTIONS,
    MAX_EVENTS,
    Listeners,
    Mode,
    ModeOptions,
    ReadinessWaiter,
    Waiter,
    epoll_missing,
)

# nginx's accept_mutex_delay, read by the built-in accept-mutex and by nginx's own (servers/launched/nginx.py)
MUTEX_DELAY = KindOption(
    "mutex_delay_ms",
    "--mutex-delay",
    "accept-mutex: how long a worker without the lock waits before trying again (nginx's accept_mutex_delay).",
    low=1,
    high=MAX_GAP_MS,
    duration=True,
)


@dataclass
class MutexListeners(Listeners):
    """The shared listener, and the lock: an unlinked file whose descriptor every worker inherits."""

    lock_file: Any = None  # an unlinked temporary file; POSIX locks on it are per process
    delay_s: float = 0.5

    def try_lock(self) -> bool:
        try:
            fcntl.lockf(self.lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False  # another worker holds it
            raise
        return True

    def unlock(self) -> None:
        fcntl.lockf(self.lock_file.fileno(), fcntl.LOCK_UN)

    def close(self) -> None:
        super().close()
        if self.lock_file is not None:
            self.lock_file.close()


class MutexWaiter(Waiter):
    def __init__(self, listeners: MutexListeners, batch: int) -> None:
        self.sock = listeners.sockets[0]
        self.listeners = listeners
        self.ep = select.epoll()
        self.listening = False
        self.accept = ReadinessWaiter(self.sock, lambda: self.ep.poll(-1, 1), batch)

    def wait(self) -> list[socket.socket]:
        if self.listeners.try_lock():
            if not self.listening:
                self.ep.register(self.sock.fileno(), select.EPOLLIN)
                self.listening = True
            try:
                return self.accept.wait()  # holding the lock: wait as long as it takes
            finally:
                self.listeners.unlock()  # released before serving, as nginx does
        if self.listening:
            self.ep.unregister(self.sock.fileno())
            self.listening = False
        self.ep.poll(self.listeners.delay_s)  # nothing registered: sleep the delay, then try again
        return []  # an empty wakeup: every non-holder has one per delay

    def watch(self, conn: socket.socket) -> None:
        self.ep.register(conn.fileno(), select.EPOLLIN)

    def unwatch(self, conn: socket.socket) -> None:
        self.ep.unregister(conn.fileno())

    def wait_kept(self) -> tuple[list[socket.socket], list[int]]:
        """nginx's loop with kept connections: the holder waits on the listener and its connections for as
        long as it takes and releases the lock once it has accepted; the others wait on their connections
        alone, at most the delay, and try the lock again."""
        listener = self.sock.fileno()
        if self.listeners.try_lock():
            if not self.listening:
                self.ep.register(listener, select.EPOLLIN)
                self.listening = True
            try:
                ready = [fd for fd, _ in self.ep.poll(-1, MAX_EVENTS)]
                accepted = self.accept.accept_ready() if listener in ready else []
            finally:
                self.listeners.unlock()
            return accepted, [fd for fd in ready if fd != listener]
        if self.listening:
            self.ep.unregister(listener)
            self.listening = False
        return [], [fd for fd, _ in self.ep.poll(self.listeners.delay_s, MAX_EVENTS)]

    def leave(self) -> list[socket.socket]:
        self.listeners.unlock()
        return super().leave()


class AcceptMutexMode(Mode):
    name = "accept-mutex"
    summary = "nginx's accept_mutex: only the lock holder has the shared listener in its epoll"
    why = (
        "only the worker holding the lock in shared memory has the listener in its epoll; it releases the lock "
        "after accepting and takes it back when it returns, while the others retry only every --mutex-delay "
        "(nginx's accept_mutex_delay, 500 ms): an idle holder keeps taking every connection"
    )
    model = Model.LOCK_HOLDER
    timed_waits = True  # a worker without the lock wakes when its delay is up: not a connection's wakeup

    def unavailable(self) -> str | None:
        return epoll_missing()

    def open(
        self, host: str, port: int, backlog: int, workers: int, options: ModeOptions = DEFAULT_OPTIONS
    ) -> Listeners:
        base = super().open(host, port, backlog, workers, options)
        try:
            lock_file = tempfile.TemporaryFile(prefix="accept-order-mutex-")
        except OSError:
            base.close()
            raise
        return MutexListeners(base.sockets, base.port, lock_file=lock_file, delay_s=options.mutex_delay_ms / 1000)

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        assert isinstance(listeners, MutexListeners)
        return MutexWaiter(listeners, batch)
