"""The sequential client: nc-style connections (connect, read the reply, close), one after another or paced.

With gap 0 each connection starts when the previous one has finished, like `for i in $(seq 6); do nc
...; done`. With a gap, connection k starts k*gap after the first whether or not the earlier ones have
finished, so that a slow worker (`--work` > `--gap`) is still busy when the next connection arrives.
Every connection ends as a record: served (by the worker its target attributes it to) or failed.

This loop is the harness's hot path (benchmarks/bench_run.py holds it to a C client doing the same): each
socket is made nonblocking at creation, watched with poll() (registering is a dict update, not an
epoll_ctl call), for reading and the peer's FIN (POLLRDHUP) from the connect on (a failed connect wakes
the reader too, and recv() raises its error). A wakeup that reports the FIN takes the reply with one recv
and finishes: no second recv for the EOF, none that ends in EAGAIN, so the usual connection costs socket,
connect, poll, recv, close. The workers' pidfds are watched through one epoll descriptor in the same
poll set: a dying worker wakes the loop, and staying alive costs nothing per connection. Each worker's
reply line is attributed once, then looked up.
"""

from __future__ import annotations

import errno
import math
import os
import select
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.cpus import current_cpu
from ..core.measures import ConnectionRecord
from ..core.processes import MAX_REPLY
from ..core.protocol import ABORTED, error_key
from ..core.spec import SequentialLoad
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


def _failure(exc: OSError) -> str:
    """`ECONNREFUSED: Connection refused`: the errno's name and its text, for a record's error."""
    if exc.errno is None:
        return error_key(exc)
    return f"{error_key(exc)}: {os.strerror(exc.errno)}"


def _checked(target: Target) -> Callable[[], None]:
    def check_then_settle() -> None:
        target.check_alive()
        target.settle()

    return check_then_settle


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


def _death_watch(fds: list[int]) -> select.epoll | None:
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


def run_sequential(
    target: Target,
    load: SequentialLoad,
    on_record: Callable[[ConnectionRecord], None] | None = None,
    accepts: AcceptLog | None = None,
) -> list[ConnectionRecord]:
    """Drive `load.connections` connections at `target`; one record per connection, in start order.

    A worker's death raises WorkerError (from target.check_alive) as soon as its pidfd wakes the loop;
    the connections in flight then end as aborted records, passed to `on_record` like the others.
    With `accepts`, a reply that names no worker is attributed to the worker the kernel saw accept the
    connection (instead of to the holder of its socket, which a server that has closed no longer is).
    """
    address, count, gap_s, timeout_s = target.address, load.connections, load.gap_ms / 1000, load.timeout_s
    attribution = target.attribution
    from_reply = attribution.from_reply
    holds_socket = attribution.holds_socket
    replies: dict[bytes, int] = {}  # reply -> worker: each worker's line is parsed once, then looked up
    pids = target.pids  # the live list: a remote target learns its workers' pids from the replies
    request, body = target.protocol.request, target.protocol.body
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    poller = select.poll()
    register, unregister, poll = poller.register, poller.unregister, poller.poll
    watched: dict[int, _InFlight] = {}  # fd -> connection
    death_fds = set(target.death_fds())
    watch = _death_watch(sorted(death_fds))
    if watch is not None:
        death_fds = {watch.fileno()}
    for fd in death_fds:
        register(fd, select.POLLIN)
    # Without pidfds (not Linux), ask before each connection instead: a waitpid per connection.
    before_each: Callable[[], None] | None = None
    if load.settle:
        before_each = target.settle if death_fds else _checked(target)
    elif not death_fds:
        before_each = target.check_alive
    records: dict[int, ConnectionRecord] = {}
    # Insertion order is start order, and start times only grow: the first entry is the oldest.
    inflight: dict[int, _InFlight] = {}
    clock = time.perf_counter_ns
    getcpu = current_cpu
    timeout_ns = timeout_s * 1e9
    t0 = clock()
    next_seq = 0

    def finish(f: _InFlight, error: str | None) -> None:
        inflight.pop(f.seq, None)
        fd = f.fd
        if watched.pop(fd, None) is not None:
            unregister(fd)
        worker: int | None = None
        sock = f.sock
        if error is None:
            data = body(f.data) if request else f.data
            worker = replies.get(data)
            if worker is None:
                worker = from_reply(data)
                if worker is not None:
                    replies[data] = worker
                elif accepts is not None:
                    try:
                        accepted = accepts.accepted_by(sock.getsockname()[1], f.started_ns)
                    except OSError:
                        accepted = None
                    worker = pids.index(accepted) if accepted in pids else None
                elif holds_socket:
                    try:
                        worker = attribution.from_socket(sock.getsockname(), sock.getpeername())
                    except OSError:
                        worker = None
                if worker is None:
                    error = "closed without a reply" if not data else f"unexpected reply {data[:40]!r}"
        sock.close()
        now = clock()
        started = f.started_ns
        pid = pids[worker] if worker is not None and worker < len(pids) else None
        rec = ConnectionRecord(
            f.seq, worker, pid, (started - t0) // 1000, (now - started) // 1000, error, f.port, f.cpu
        )
        records[f.seq] = rec
        if on_record:
            on_record(rec)

    def start(seq: int) -> None:
        try:
            sock = socket.socket(family, SOCK_STREAM_NONBLOCK)
        except OSError as exc:  # e.g. EMFILE: too many connections in flight for the open-file limit
            records[seq] = ConnectionRecord(seq, None, None, (clock() - t0) // 1000, 0, _failure(exc))
            if on_record:
                on_record(records[seq])
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
        watched[fd] = f
        register(fd, READABLE | select.POLLOUT if request else READABLE)
        if code and code != errno.EINPROGRESS:
            finish(f, _failure(OSError(code, os.strerror(code))))

    def send(f: _InFlight) -> None:
        """The connect completed: send the request (small: one send takes it), then wait for the reply."""
        try:
            sent = f.sock.send(f.unsent)
        except OSError as exc:
            finish(f, _failure(exc))
            return
        f.unsent = f.unsent[sent:]
        if not f.unsent:
            poller.modify(f.fd, READABLE)

    def read(f: _InFlight, events: int) -> None:
        """Take what the socket has now; finish on EOF, an error, or a reply that is too long.

        With the peer's FIN already in (POLLRDHUP alone), a recv that did not fill the buffer took
        everything the worker sent: the connection is finished without the recv that would only say
        EOF. Otherwise, after data, the next wakeup brings the rest or the EOF (no recv to EAGAIN)."""
        sock = f.sock
        fin = events & CLOSED_MASK == POLLRDHUP
        while True:
            try:
                chunk = sock.recv(MAX_REPLY)
            except BlockingIOError:
                return  # nothing more yet: wait for the next wakeup
            except OSError as exc:
                finish(f, _failure(exc))
                return
            if not chunk or len(f.data) >= MAX_REPLY:
                finish(f, None)  # EOF: the worker answered and closed (or the reply is too long)
                return
            f.data += chunk
            if holds_socket:  # attribute while the server still holds the connection, then close it
                finish(f, None)
                return
            if len(chunk) < MAX_REPLY:
                if fin:
                    finish(f, None)
                return

    try:
        while next_seq < count or inflight:
            now = due = clock()
            if next_seq < count:
                if gap_s <= 0:
                    ready_to_start = not inflight
                else:
                    due = t0 + int(next_seq * gap_s * 1e9)
                    ready_to_start = now >= due
                if ready_to_start:
                    if before_each:
                        before_each()
                    start(next_seq)
                    next_seq += 1
                    continue
            wait_s = timeout_s
            if next_seq < count and gap_s > 0:
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
                        read(f, events)
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
        # Stopped early (a worker died, Ctrl-C): what was in flight still ends as a record.
        for f in list(inflight.values()):
            finish(f, f"{ABORTED}: the run stopped before this connection finished")
        if watch is not None:
            watch.close()
    return [records[i] for i in sorted(records)]
