"""What the sequential client's loops share: how a connection becomes a record, how its reply is read.

A connection ends in `Books.close`: its reply attributed to a worker (each worker's line parsed once, then
looked up), its socket closed, its record kept and passed on. `take` reads what a socket has, the same way
in every loop: with the peer's FIN already in, one recv takes the reply and its end.
"""

from __future__ import annotations

import os
import select
import socket
import time
from _socket import socket as RawSocket
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.measures import ConnectionRecord
from ..core.processes import MAX_REPLY
from ..core.protocol import ABORTED, BAD_REPLY, error_key
from ..core.target import Target

if TYPE_CHECKING:
    from ..probes.accept_log import AcceptLog

# A nonblocking socket in one system call where the platform has SOCK_NONBLOCK (Linux).
NONBLOCK_FLAG: int = getattr(socket, "SOCK_NONBLOCK", 0)
SOCK_STREAM_NONBLOCK = socket.SOCK_STREAM | NONBLOCK_FLAG
# POLLRDHUP (Linux): the peer's FIN is in. With it, a reply and its close take one recv, not two.
POLLRDHUP: int = getattr(select, "POLLRDHUP", 0)
READABLE = select.POLLIN | POLLRDHUP
# The FIN and nothing worse: a reset or an error is left for recv to report.
CLOSED_MASK = POLLRDHUP | select.POLLHUP | select.POLLERR
# SO_RCVLOWAT (Linux): a socket is not readable, and its reader not woken, before this many bytes or the
# FIN. A worker's reply and its close are two segments; without it a third of connections woke the
# client twice (the reply, then the FIN a few microseconds later). Not where the client must attribute
# the connection while the server still holds it (Attribution.holds_socket).
SO_RCVLOWAT: int | None = getattr(socket, "SO_RCVLOWAT", None) if POLLRDHUP else None
STOPPED = f"{ABORTED}: the run stopped before this connection finished"
# A reply naming no worker, of a server that closed the connection before its holder was looked up (fd tables):
# Python's http.server answering HTTP/1.0 without a Content-Length, read to its end, read 'unexpected reply
# b'hello\n'' for 86 to 100 of 100, where the reply was what it should be and only its holder was gone.
HOLDER_GONE = f"{BAD_REPLY} (it names no worker, and the server closed the connection before its holder was found)"


def failure(exc: OSError) -> str:
    """`ECONNREFUSED: Connection refused`: the errno's name and its text, for a record's error."""
    if exc.errno is None:
        return error_key(exc)
    return f"{error_key(exc)}: {os.strerror(exc.errno)}"


def death_watch(fds: list[int]) -> select.epoll | None:
    """One descriptor that becomes readable when any of `fds` does (an epoll holding them), so that each
    poll() scans two descriptors however many workers there are; None where there is no epoll."""
    epoll = getattr(select, "epoll", None)
    if not fds or epoll is None:
        return None
    watch = epoll()
    try:
        for fd in fds:
            watch.register(fd, select.EPOLLIN)
    except OSError:
        watch.close()
        return None
    return watch


def take(
    sock: RawSocket, data: bytes, events: int, holds_socket: bool, whole: Callable[[bytes], int] | None = None
) -> tuple[bytes, bool, str | None]:
    """Read what the socket has now: (the reply so far, finished, error).

    Finished on EOF, an error, or a reply that is too long. With the peer's FIN already in (POLLRDHUP
    alone), a recv that did not fill the buffer took everything the worker sent: finished without the
    recv that would only say EOF. Otherwise, after data, the next wakeup brings the rest or the EOF. Where
    the server holds the connection until it is attributed, finished at the first data, unless `whole` (the
    protocol's framing, Books.whole) says the reply is not whole yet: gunicorn's head and body came in two
    segments in 1 connection of 100, and the head alone read as a 200 with an empty body."""
    fin = events & CLOSED_MASK == POLLRDHUP
    while True:
        try:
            chunk = sock.recv(MAX_REPLY)
        except BlockingIOError:
            return data, False, None  # nothing more yet: wait for the next wakeup
        except OSError as exc:
            return data, True, failure(exc)
        if not chunk or len(data) >= MAX_REPLY:
            return data, True, None  # EOF: the worker answered and closed (or the reply is too long)
        data += chunk
        if holds_socket and (whole is None or whole(data)):  # attribute while the server holds it, then close
            return data, True, None
        if len(chunk) < MAX_REPLY:
            return data, fin, None


def _at_its_end(sock: RawSocket) -> bool:
    """Whether the peer has ended a reply already read in full: nothing more to read before its end (a closed or
    reset socket reads as neither)."""
    try:
        return not sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except OSError:  # nothing yet (EAGAIN), a reset, or the socket already closed
        return False


class Books:
    """One drive's records by sequence number, and how a reply names its worker.

    With `accepts`, a reply that names no worker is attributed to the worker the kernel saw accept the
    connection (instead of to the holder of its socket, which a server that has closed no longer is)."""

    def __init__(
        self,
        target: Target,
        on_record: Callable[[ConnectionRecord], None] | None,
        accepts: AcceptLog | None,
    ) -> None:
        self.attribution = target.attribution
        self.holds_socket = self.attribution.holds_socket
        # Where the server holds each connection: the length of a whole reply at the start of what was read, 0
        # while it is not (the protocol's framing: an HTTP head's Content-Length or chunks); None: its first data.
        self.whole = target.protocol.reply_end if self.holds_socket and target.protocol.keeps_open else None
        self.pids = target.pids  # the live list: a remote target learns its workers' pids from the replies
        protocol = target.protocol
        self.body = protocol.body if protocol.request else None
        self.complaint = protocol.complaint if protocol.request else None  # names an HTTP error status
        self.accepts = accepts
        self.on_record = on_record
        self.replies: dict[bytes, int] = {}  # reply -> worker: each worker's line is parsed once
        self.records: dict[int, ConnectionRecord] = {}
        self.clock = time.perf_counter_ns
        self.t0 = self.clock()

    def worker_of(self, data: bytes, sock: RawSocket, started_ns: int) -> tuple[int | None, str | None]:
        """(worker, None) for a reply that names one of the target's workers, else (None, why not): an HTTP
        reply whose body was not kept (not a 200, or one without a body) is a failure named by its status, as the
        latency loops name it ('bad reply (HTTP 400)'), not 'closed without a reply' (nginx's '400 The plain HTTP
        request was sent to HTTPS port'), and not served by whichever worker the kernel saw accept it (the accept
        log's attribution answered in time for some of such connections: 1 of 3 nginx 400s counted served)."""
        raw = data
        if not raw:  # closed without a word: no reply, whoever accepted it (as latency's loops count it, 'no reply')
            return None, "closed without a reply"
        if self.body is not None:
            data = self.body(data)
        if raw and not data and self.complaint is not None:
            return None, self.complaint(raw)
        worker = self.replies.get(data)
        if worker is not None:
            return worker, None
        worker = self.attribution.from_reply(data)
        if worker is not None:
            self.replies[data] = worker
        elif self.accepts is not None:
            try:
                accepted = self.accepts.accepted_by(
                    sock.getsockname()[1], started_ns, server_port=sock.getpeername()[1]
                )
            except OSError:
                accepted = None
            worker = self.pids.index(accepted) if accepted in self.pids else None
        elif self.holds_socket:
            try:
                worker = self.attribution.from_socket(sock.getsockname(), sock.getpeername())
            except OSError:
                worker = None
            if worker is None and data and _at_its_end(sock):
                return None, HOLDER_GONE
        if worker is not None:
            return worker, None
        return None, "closed without a reply" if not data else f"unexpected reply {data[:40]!r}"

    def close(
        self,
        seq: int,
        sock: RawSocket,
        started_ns: int,
        ended_ns: int,
        data: bytes,
        error: str | None,
        port: int | None,
        cpu: int | None,
    ) -> None:
        """The connection's end (its reply, or its failure, at `ended_ns`): attribute its reply (unless it
        failed), close it, keep its record."""
        worker: int | None = None
        if error is None:
            worker, error = self.worker_of(data, sock, started_ns)
        sock.close()
        self.record(seq, worker, started_ns, ended_ns, error, port, cpu)

    def record(
        self,
        seq: int,
        worker: int | None,
        started_ns: int,
        ended_ns: int,
        error: str | None,
        port: int | None,
        cpu: int | None,
    ) -> None:
        """Keep the record of a connection that has ended (its socket closed): its latency runs from the
        connect to the end of its reply (or its failure), as the load generator's do."""
        self.keep(self.made(seq, worker, started_ns, ended_ns, error, port, cpu))

    def made(
        self,
        seq: int,
        worker: int | None,
        started_ns: int,
        ended_ns: int,
        error: str | None,
        port: int | None,
        cpu: int | None,
    ) -> ConnectionRecord:
        pids = self.pids
        pid = pids[worker] if worker is not None and worker < len(pids) else None
        return ConnectionRecord(
            seq, worker, pid, (started_ns - self.t0) // 1000, (ended_ns - started_ns) // 1000, error, port, cpu
        )

    def unopened(self, seq: int, exc: OSError) -> None:
        """A connection whose socket could not be made (EMFILE: too many open for the file limit)."""
        self.keep(ConnectionRecord(seq, None, None, (self.clock() - self.t0) // 1000, 0, failure(exc)))

    def cut(
        self,
        seq: int,
        sock: RawSocket,
        started_ns: int,
        data: bytes,
        error: str | None,
        port: int | None,
        cpu: int | None,
        ended_ns: int | None = None,
    ) -> None:
        """A connection that a signal (or an error) cut short before its record was made: closed, and recorded as
        what it was at the stop. Its failure, when the loop had seen one. When its whole reply was in, what `close`
        would have made of it: the loop saw its end (`ended_ns`), or, with the socket still open, what was read so
        far is followed by the peer's end and nothing else (or, where the server holds the connection until it is
        attributed, any reply). Served where that reply names a worker (its latency then runs to the stop, a few
        statements past its end); else, where the loop had taken the reply as whole, the reply's failure (a bad reply,
        or none before the close). Else aborted (STOPPED), unless its record was kept before the signal came."""
        if seq in self.records:
            sock.close()
            return
        worker: int | None = None
        # What the loop took as a whole reply (it saw the end, or the server holds the connection) is what `close`
        # makes of it, a failure too. A reply read up to the peer's end (peeked) may still have lost a later part
        # inside the recv that read it, as one read before anything does: served where it names a worker, else
        # aborted, not said to be the server's failure.
        whole = (
            ended_ns is not None or bool(data) and self.holds_socket and (self.whole is None or self.whole(data) > 0)
        )
        if error is None and (whole or data and _at_its_end(sock)):
            try:
                worker, why = self.worker_of(data, sock, started_ns)
            except OSError:
                worker, why = None, None
            error = why if whole else None
        sock.close()
        if worker is not None or error is not None:  # made here, not by `record`, which the signal may have cut
            self.keep(self.made(seq, worker, started_ns, ended_ns or self.clock(), error, port, cpu))
        else:
            self.stopped(seq, started_ns, port, cpu)

    def stopped(self, seq: int, started_ns: int, port: int | None, cpu: int | None) -> None:
        """A connection whose recording a signal (or an error) cut short: aborted, unless its record was kept
        before it came. The loops call it on their way out, so that the run's records have no gap."""
        if seq not in self.records:
            start_us, latency_us = (started_ns - self.t0) // 1000, (self.clock() - started_ns) // 1000
            self.keep(ConnectionRecord(seq, None, None, start_us, latency_us, STOPPED, port, cpu))

    def keep(self, record: ConnectionRecord) -> None:
        # Passed on first, then kept: a signal in between leaves it unkept, and `stopped` passes it on again
        # as aborted (the caller keeps the first it got). Kept first, the caller could miss it altogether.
        if self.on_record:
            self.on_record(record)
        self.records[record.seq] = record

    def in_order(self) -> list[ConnectionRecord]:
        return [self.records[i] for i in sorted(self.records)]
