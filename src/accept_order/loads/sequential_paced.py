"""The sequential client with a gap: connection k starts k*gap after the first, whether or not the earlier
ones have finished, so that a slow worker (`--work` > `--gap`) is still busy when the next one arrives.

Every socket is nonblocking from its creation and watched with poll() (registering is a dict update, not
an epoll_ctl call) for reading and the peer's FIN from the connect on: a failed connect wakes the reader
too, and recv() raises its error. The connections in flight are kept in start order, so the oldest (the
first to time out) is always the first entry.
"""

from __future__ import annotations

import errno
import math
import os
import select
import socket
from collections.abc import Callable

from ..core.cpus import current_cpu
from ..core.spec import SequentialLoad
from ..core.target import Target
from .sequential_books import NONBLOCK_FLAG, READABLE, SOCK_STREAM_NONBLOCK, Books, failure, take


class _InFlight:
    __slots__ = ("seq", "sock", "fd", "started_ns", "data", "unsent", "port", "cpu")

    def __init__(self, seq: int, sock: socket.socket, fd: int, started_ns: int, unsent: bytes = b"") -> None:
        self.seq = seq
        self.sock = sock
        self.fd = fd
        self.started_ns = started_ns
        self.data = b""
        self.unsent = unsent  # the protocol's request, sent once the connect has completed
        self.port: int | None = None  # the client's local port, bound by connect
        self.cpu: int | None = None  # the CPU the connect ran on


def drive_paced(
    target: Target,
    load: SequentialLoad,
    books: Books,
    death_fds: set[int],
    before_each: Callable[[], None] | None,
) -> None:
    """Start connection k at k*gap and wait for all of them, the workers' death watch (`death_fds`) in the
    same poll set. Whatever is in flight when the drive stops (a worker died, Ctrl-C) ends as an aborted
    record, or a served one where its whole reply was read (Books.cut)."""
    address, count, gap_s, timeout_s = target.address, load.connections, load.gap_ms / 1000, load.timeout_s
    request = target.protocol.request
    holds_socket, whole = books.holds_socket, books.whole
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    poller = select.poll()
    register, unregister, poll = poller.register, poller.unregister, poller.poll
    for fd in death_fds:
        register(fd, select.POLLIN)
    watched: dict[int, _InFlight] = {}  # fd -> connection
    # Insertion order is start order, and start times only grow: the first entry is the oldest.
    inflight: dict[int, _InFlight] = {}
    clock = books.clock
    getcpu = current_cpu
    timeout_ns = timeout_s * 1e9
    t0 = books.t0
    next_seq = 0

    def finish(f: _InFlight, error: str | None) -> None:
        """Close and record a connection whose end (its reply, or its failure) the loop has seen."""
        # All of it inside the try: a signal is raised where a call returns, and one right after the pop
        # from `inflight` would leave the connection in no list and without a record.
        ended: int | None = None
        try:
            ended = clock()
            inflight.pop(f.seq, None)
            if watched.pop(f.fd, None) is not None:
                unregister(f.fd)
            books.close(f.seq, f.sock, f.started_ns, ended, f.data, error, f.port, f.cpu)
        except BaseException:  # a signal while it was recorded: out of `inflight`, it still ends as a record
            books.cut(f.seq, f.sock, f.started_ns, f.data, error, f.port, f.cpu, ended)
            raise

    def start(seq: int) -> None:
        try:
            sock = socket.socket(family, SOCK_STREAM_NONBLOCK)
        except OSError as exc:  # e.g. EMFILE: too many connections in flight for the open-file limit
            books.unopened(seq, exc)
            return
        if not NONBLOCK_FLAG:
            sock.setblocking(False)
        fd = sock.fileno()
        f = inflight[seq] = _InFlight(seq, sock, fd, clock(), request)
        code = sock.connect_ex(address)
        if getcpu is not None:
            f.cpu = getcpu()
        if not code or code == errno.EINPROGRESS:
            f.port = sock.getsockname()[1]  # bound by connect: how the server's own log names this connection
        # Watch for reading right away: the reply can only come after the connect completes, and a
        # connect that fails wakes the reader too (POLLERR/POLLHUP), with recv() raising its error.
        # A protocol with a request also waits for writability: the connect has completed.
        # Registered before it is in `watched`: finish unregisters what `watched` holds, and a signal in
        # between would have it unregister a descriptor the poll set never had (KeyError, the record lost).
        register(fd, READABLE | select.POLLOUT if request else READABLE)
        watched[fd] = f
        if code and code != errno.EINPROGRESS:
            finish(f, failure(OSError(code, os.strerror(code))))

    def send(f: _InFlight) -> None:
        """The connect completed: send the request (small: one send takes it), then wait for the reply."""
        try:
            sent = f.sock.send(f.unsent)
        except OSError as exc:
            finish(f, failure(exc))
            return
        f.unsent = f.unsent[sent:]
        if not f.unsent:
            poller.modify(f.fd, READABLE)

    try:
        while next_seq < count or inflight:
            now = clock()
            due = t0 + int(next_seq * gap_s * 1e9)
            if next_seq < count and now >= due:
                if before_each:
                    before_each()
                start(next_seq)
                next_seq += 1
                continue
            wait_s = timeout_s
            if next_seq < count:
                wait_s = max(0.0, (due - now) / 1e9)
            if inflight:
                oldest = next(iter(inflight.values())).started_ns
                wait_s = min(wait_s, max(0.0, (oldest + timeout_ns - now) / 1e9))
            died = False
            for fd, events in poll(math.ceil(wait_s * 1000)):
                f = watched.get(fd)
                if f is not None:
                    if f.unsent and events & select.POLLOUT and not events & (select.POLLERR | select.POLLHUP):
                        send(f)
                    else:
                        f.data, done, error = take(f.sock, f.data, events, holds_socket, whole)
                        if done:
                            finish(f, error)
                elif fd in death_fds:
                    died = True
            if died:  # after the replies of this wakeup: a worker that answered, then exited, has served
                target.check_alive()  # a worker exited: raises WorkerError naming it
            if inflight:
                now = clock()
                while inflight:
                    f = next(iter(inflight.values()))
                    if now - f.started_ns <= timeout_ns:
                        break  # the oldest still has time, so every later one has too
                    finish(f, f"timeout: no answer within {timeout_s:g} s")
    finally:
        # Stopped early (a worker died, Ctrl-C): what was in flight still ends as a record, served where its whole
        # reply had been read (the signal came before `finish`), else aborted.
        for f in list(inflight.values()):
            inflight.pop(f.seq, None)
            books.cut(f.seq, f.sock, f.started_ns, f.data, None, f.port, f.cpu)
