"""`accept-mutex`: nginx's accept_mutex, rebuilt: only the worker holding a lock in shared memory listens.

nginx (ngx_trylock_accept_mutex, ngx_event_accept.c): before each epoll_wait a worker tries the lock without
blocking. The holder adds the listener to its epoll and waits as long as it likes; the others take the
listener out of theirs and wait at most accept_mutex_delay (500 ms) before trying again. The holder releases
the lock once it has accepted, before it serves, and tries again when it comes back. An idle server's
holder is back long before anyone's delay is up, so it keeps the lock, and with it every connection.

The lock is nginx's too: the holder's pid in shared memory (ngx_shmtx), so the supervisor can release it
for a worker that was killed while holding it, as nginx's master does (ngx_shmtx_force_unlock).
"""

from __future__ import annotations

import os
import select
import socket
from dataclasses import dataclass
from typing import Any

from ...processes import FORK
from .base import DEFAULT_OPTIONS, Listeners, Mode, ModeOptions, ReadinessWaiter, Waiter, epoll_missing


@dataclass
class MutexListeners(Listeners):
    """The shared listener, and the lock: a pid slot and a semaphore that makes taking it atomic."""

    holder: Any = None  # RawValue("q"): pid of the worker holding the accept mutex, 0 when free
    guard: Any = None  # multiprocessing Lock: compare-and-set of `holder` (Python has no atomic CAS)
    delay_s: float = 0.5

    def try_lock(self, pid: int) -> bool:
        with self.guard:
            if self.holder.value in (0, pid):
                self.holder.value = pid
                return True
            return False

    def unlock(self, pid: int) -> None:
        with self.guard:
            if self.holder.value == pid:
                self.holder.value = 0

    def forget(self, pid: int) -> None:
        # A SIGKILLed holder never unlocks: without this nobody would accept again (nginx's master does the
        # same in ngx_unlock_mutexes). The guard is held only for a compare: a kill inside it is not covered.
        if self.holder.value == pid:
            self.holder.value = 0


class MutexWaiter(Waiter):
    def __init__(self, listeners: MutexListeners, batch: int) -> None:
        self.sock = listeners.sockets[0]
        self.listeners = listeners
        self.pid = os.getpid()
        self.ep = select.epoll()
        self.listening = False
        self.accept = ReadinessWaiter(self.sock, lambda: self.ep.poll(-1, 1), batch)

    def wait(self) -> list[socket.socket]:
        if self.listeners.try_lock(self.pid):
            if not self.listening:
                self.ep.register(self.sock.fileno(), select.EPOLLIN)
                self.listening = True
            try:
                return self.accept.wait()  # holding the lock: wait as long as it takes
            finally:
                self.listeners.unlock(self.pid)  # released before serving, as nginx does
        if self.listening:
            self.ep.unregister(self.sock.fileno())
            self.listening = False
        self.ep.poll(self.listeners.delay_s)  # nothing registered: sleep the delay, then try again
        return []  # an empty wakeup: every non-holder has one per delay

    def leave(self) -> list[socket.socket]:
        self.listeners.unlock(self.pid)
        return super().leave()


class AcceptMutexMode(Mode):
    name = "accept-mutex"
    summary = "nginx's accept_mutex: only the lock holder has the shared listener in its epoll"
    why = (
        "only the worker holding the lock in shared memory has the listener in its epoll; it releases the lock "
        "after accepting and takes it back when it returns, while the others retry only every --mutex-delay "
        "(nginx's accept_mutex_delay, 500 ms): an idle holder keeps taking every connection"
    )
    model = "lock-holder"

    def unavailable(self) -> str | None:
        return epoll_missing()

    def open(
        self, host: str, port: int, backlog: int, workers: int, options: ModeOptions = DEFAULT_OPTIONS
    ) -> Listeners:
        base = super().open(host, port, backlog, workers, options)
        return MutexListeners(
            base.sockets,
            base.port,
            holder=FORK.RawValue("q", 0),
            guard=FORK.Lock(),
            delay_s=options.mutex_delay_ms / 1000,
        )

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        assert isinstance(listeners, MutexListeners)
        return MutexWaiter(listeners, batch)
