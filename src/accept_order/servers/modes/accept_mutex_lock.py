"""accept-mutex's machinery (the mode is declared in accept_mutex.py): the listener with its lock file, and a
worker's wait, which takes the lock before it listens as nginx's does."""

from __future__ import annotations

import errno
import fcntl
import select
import socket
from typing import Any

from .base import MAX_EVENTS, Listeners, ReadinessWaiter, Waiter


class MutexListeners(Listeners):
    """The shared listener, and the lock: an unlinked file whose descriptor every worker inherits."""

    def __init__(self, sockets: list[socket.socket], port: int, lock_file: Any = None, delay_s: float = 0.5) -> None:
        super().__init__(sockets, port)
        self.lock_file = lock_file  # an unlinked temporary file; POSIX locks on it are per process
        self.delay_s = delay_s

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
