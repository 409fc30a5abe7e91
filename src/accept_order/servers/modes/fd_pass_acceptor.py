"""fd-pass's machinery (the mode is declared in fd_pass.py): the listeners with one socket pair per worker, the
acceptor process that hands each connection over, and a worker's side of its pair."""

from __future__ import annotations

import errno
import select
import signal
import socket
from collections import deque
from collections.abc import Callable
from typing import Any

from .base import Listeners, Waiter

CONN = b"c"  # acceptor -> worker: a connection (its descriptor rides along)
BACK = b"a"  # worker -> acceptor: back for more, done with one
QUIT = b"q"  # worker -> acceptor: leaving; acceptor -> worker: nothing more will come


class PassingListeners(Listeners):
    """The listener (the acceptor's alone) and one socket pair per worker: (acceptor end, worker end)."""

    def __init__(
        self,
        sockets: list[socket.socket],
        port: int,
        channels: list[tuple[socket.socket, socket.socket]] | None = None,
        policy: str = "round-robin",
    ) -> None:
        super().__init__(sockets, port)
        self.channels = channels if channels is not None else []
        self.policy = policy

    def keep_only(self, index: int) -> None:
        """In worker `index`: keep only its own end; it must never accept (nor hold the listener open)."""
        for sock in self.sockets:
            sock.close()
        for i, (acceptor_end, worker_end) in enumerate(self.channels):
            acceptor_end.close()
            if i != index:
                worker_end.close()

    def close(self) -> None:
        super().close()
        for acceptor_end, worker_end in self.channels:
            acceptor_end.close()
            worker_end.close()

    def acceptor(self) -> Callable[[], Acceptor]:
        return lambda: Acceptor(self)  # made in the acceptor's process: it closes the workers' ends there


class PassedWaiter(Waiter):
    """A worker's wait: the next descriptor from the acceptor."""

    def __init__(self, channel: socket.socket) -> None:
        self.sock = channel
        self.holding = False
        self.ep: select.epoll | None = None  # kept connections: the channel and they, in one epoll

    def watch(self, conn: socket.socket) -> None:
        if self.ep is None:
            self.ep = select.epoll()
            self.ep.register(self.sock.fileno(), select.EPOLLIN)
        self.ep.register(conn.fileno(), select.EPOLLIN)

    def unwatch(self, conn: socket.socket) -> None:
        """Done with a kept connection: say so, so that `least-busy` counts the connections each holds."""
        assert self.ep is not None
        self.ep.unregister(conn.fileno())
        try:
            self.sock.send(BACK)
        except OSError:
            pass  # the acceptor is gone: the supervisor sees it

    def wait_kept(self) -> tuple[list[socket.socket], list[int]]:
        """The channel and the kept connections in one epoll (an event-driven worker, as Node's cluster
        workers are). A connection is acknowledged when it closes (`unwatch`), not when it was answered."""
        if self.ep is None:
            self.ep = select.epoll()
            self.ep.register(self.sock.fileno(), select.EPOLLIN)
        channel = self.sock.fileno()
        ready = [fd for fd, _ in self.ep.poll(-1, 64)]
        accepted: list[socket.socket] = []
        if channel in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(self.sock, 16, 1)
            except (BrokenPipeError, ConnectionResetError):
                msg, fds = b"", []
            if msg == CONN and fds:
                accepted.append(socket.socket(fileno=fds[0]))
            else:
                for fd in fds:
                    socket.close(fd)
                if msg == CONN:  # the descriptor did not fit (out of files): say done with it
                    self.sock.send(BACK)
                elif not msg:  # the acceptor is gone: the supervisor sees that and stops everyone
                    while True:
                        signal.pause()
        return accepted, [fd for fd in ready if fd != channel]

    def wait(self) -> list[socket.socket]:
        try:
            if self.holding:
                self.sock.send(BACK)  # done with the last one
                self.holding = False
            while True:
                msg, fds, flags, _ = socket.recv_fds(self.sock, 16, 1)
                if msg == CONN and fds:
                    self.holding = True
                    return [socket.socket(fileno=fds[0])]
                for fd in fds:  # never expected; do not leak it
                    socket.close(fd)
                if msg == CONN:  # the descriptor did not fit (MSG_CTRUNC: out of files): say done with it
                    self.sock.send(BACK)
                    continue
                if not msg:
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        # The acceptor is gone: the supervisor sees that (check_alive) and stops everyone; wait for it.
        while True:
            signal.pause()

    def leave(self) -> list[socket.socket]:
        """Say so, then take what was already sent until the acceptor confirms nothing more will come."""
        held: list[socket.socket] = []
        try:
            self.sock.send(QUIT)
            while True:
                msg, fds, _, _ = socket.recv_fds(self.sock, 16, 1)
                if msg == CONN and fds:
                    held.append(socket.socket(fileno=fds[0]))
                elif msg in (QUIT, b""):
                    break
        except OSError:
            pass
        self.sock.close()
        return held


class Acceptor:
    """The acceptor process's loop: accept everything, choose a worker, pass the descriptor.

    It never blocks on a worker: its ends are nonblocking, and what a busy worker's socket cannot take yet
    waits in that worker's line here, sent when the socket has room (EPOLLOUT). Blocking there would stop
    it reading the workers' acknowledgements, and a worker blocked writing one would wait for it: a deadlock
    a burst of a few thousand connections reaches."""

    def __init__(self, listeners: PassingListeners) -> None:
        self.listener = listeners.sockets[0]
        self.ends = [acceptor_end for acceptor_end, _ in listeners.channels]
        for _, worker_end in listeners.channels:
            worker_end.close()
        for end in self.ends:
            end.setblocking(False)
        self.policy = listeners.policy
        workers = len(self.ends)
        self.holding = [0] * workers  # handed over (sent or in its line here), not yet acknowledged
        self.passed = [0] * workers
        self.gone = [False] * workers
        self.lines: list[deque[socket.socket | None]] = [deque() for _ in range(workers)]  # None: QUIT
        self.last = -1
        self.lost = 0  # accepted with no worker left to take it
        self.ep = select.epoll()

    def choose(self) -> int | None:
        workers = len(self.ends)
        order = [(self.last + 1 + k) % workers for k in range(workers)]  # round from after the last one
        alive = [i for i in order if not self.gone[i]]
        if not alive:
            return None
        if self.policy == "least-busy":
            return min(alive, key=lambda i: self.holding[i])  # min() keeps the first of equals: ties go round
        return alive[0]

    def dispatch(self, conn: socket.socket) -> None:
        index = self.choose()
        if index is None:
            self.lost += 1  # closed unanswered: the client counts it as failed
            conn.close()
            return
        self.holding[index] += 1
        self.passed[index] += 1
        self.last = index
        self.lines[index].append(conn)
        self.flush(index)

    def flush(self, index: int) -> None:
        """Send what waits for worker `index` until its socket is full (then wait for EPOLLOUT)."""
        line, end = self.lines[index], self.ends[index]
        while line:
            conn = line[0]
            try:
                if conn is None:
                    end.send(QUIT)
                else:
                    socket.send_fds(end, [CONN], [conn.fileno()])
            except BlockingIOError:
                self.ep.modify(end.fileno(), select.EPOLLIN | select.EPOLLOUT)
                return
            except OSError as exc:
                if exc.errno in (errno.EPIPE, errno.ECONNRESET, errno.ECONNREFUSED):
                    self.leave(index)  # killed: the others get what was waiting for it
                    return
                raise
            line.popleft()
            if conn is not None:
                conn.close()  # the worker has its own copy now
        if not self.gone[index]:
            self.ep.modify(end.fileno(), select.EPOLLIN)

    def leave(self, index: int) -> None:
        """Worker `index` is gone or going: what still waits for it here goes to the others."""
        self.gone[index] = True
        waiting = [c for c in self.lines[index] if c is not None]
        self.lines[index].clear()
        self.holding[index] -= len(waiting)
        self.passed[index] -= len(waiting)
        for conn in waiting:
            self.dispatch(conn)

    def hear(self, index: int) -> None:
        """Acknowledgements from a worker, or its leaving (a message or the end of its socket)."""
        try:
            data = self.ends[index].recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self.holding[index] = max(0, self.holding[index] - data.count(BACK))
        if QUIT in data or not data:
            quitting = bool(data)
            self.leave(index)
            if quitting:  # after everything already sent: the worker takes those first, then goes
                self.lines[index].append(None)
                self.flush(index)

    def run(self) -> None:
        ep = self.ep
        ep.register(self.listener.fileno(), select.EPOLLIN)
        by_fd = {}
        for index, end in enumerate(self.ends):
            ep.register(end.fileno(), select.EPOLLIN)
            by_fd[end.fileno()] = index
        listener_fd = self.listener.fileno()
        try:
            while True:
                for fd, events in ep.poll(-1):
                    if fd == listener_fd:
                        self.accept_all()
                        continue
                    if fd not in by_fd:
                        continue
                    index = by_fd[fd]
                    if events & select.EPOLLOUT:
                        self.flush(index)
                    if events & (select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR):
                        self.hear(index)
                    if self.gone[index] and not self.lines[index]:
                        ep.unregister(fd)
                        del by_fd[fd]
        finally:
            ep.close()

    def accept_all(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    return  # out of descriptors: the rest stay queued until some are passed on
                raise
            conn.setblocking(True)
            self.dispatch(conn)

    def report(self) -> dict[str, Any]:
        return {"policy": self.policy, "passed": list(self.passed), "lost": self.lost}
