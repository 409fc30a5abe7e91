"""The sequential client: nc-style connections (connect, read the reply, close), one after another or paced.

With gap 0 each connection starts when the previous one has finished, like `for i in $(seq 6); do nc
...; done`. With a gap, connection k starts k*gap after the first whether or not the earlier ones have
finished, so that a slow worker (`--work-ms` > gap) is still busy when the next connection arrives.
Every connection ends as a record: served (by the worker its target attributes it to) or failed.

This loop is the harness's hot path (benchmarks/bench_run.py holds it to a C client doing the same): each
socket is made nonblocking at creation, watched with poll() (registering is a dict update, not an
epoll_ctl call), for reading only from the connect on (a failed connect wakes the reader too, and recv()
raises its error), and read until EAGAIN on each wakeup, so that a reply and the close behind it usually
cost one wait instead of three. The workers' pidfds sit in the same poll set: a dying worker wakes the
loop, and staying alive costs nothing per connection.
"""

from __future__ import annotations

import errno
import math
import os
import select
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..processes import MAX_REPLY
from ..results.records import ConnectionRecord
from ..servers.target import Target
from ..spec import SequentialLoad
from .protocol import ABORTED, error_key

# A nonblocking socket in one system call where the platform has SOCK_NONBLOCK (Linux).
NONBLOCK_FLAG: int = getattr(socket, "SOCK_NONBLOCK", 0)
SOCK_STREAM_NONBLOCK = socket.SOCK_STREAM | NONBLOCK_FLAG


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


@dataclass
class _InFlight:
    seq: int
    sock: socket.socket
    started_ns: int
    data: bytearray = field(default_factory=bytearray)


def run_sequential(
    target: Target,
    load: SequentialLoad,
    on_record: Callable[[ConnectionRecord], None] | None = None,
) -> list[ConnectionRecord]:
    """Drive `load.connections` connections at `target`; one record per connection, in start order.

    A worker's death raises WorkerError (from target.check_alive) as soon as its pidfd wakes the loop;
    the connections in flight then end as aborted records, passed to `on_record` like the others.
    """
    address, count, gap_s, timeout_s = target.address, load.connections, load.gap_ms / 1000, load.timeout_s
    attribution = target.attribution
    pids = list(target.pids)
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    poller = select.poll()
    watched: dict[int, _InFlight] = {}  # fd -> connection
    death_fds = set(target.death_fds())
    for fd in death_fds:
        poller.register(fd, select.POLLIN)
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
    timeout_ns = timeout_s * 1e9
    t0 = clock()
    next_seq = 0

    def finish(f: _InFlight, error: str | None) -> None:
        inflight.pop(f.seq, None)
        fd = f.sock.fileno()
        if watched.pop(fd, None) is not None:
            poller.unregister(fd)
        worker: int | None = None
        if error is None:
            worker = attribution.from_reply(bytes(f.data))
            if worker is None and attribution.holds_socket:
                try:
                    worker = attribution.from_socket(f.sock.getsockname(), f.sock.getpeername())
                except OSError:
                    worker = None
            if worker is None:
                error = "closed without a reply" if not f.data else f"unexpected reply {bytes(f.data[:40])!r}"
        f.sock.close()
        now = clock()
        pid = pids[worker] if worker is not None else None
        start_us, latency_us = (f.started_ns - t0) // 1000, (now - f.started_ns) // 1000
        rec = ConnectionRecord(f.seq, worker, pid, start_us, latency_us, error)
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
        f = _InFlight(seq, sock, clock())
        inflight[seq] = f
        code = sock.connect_ex(address)
        # Watch for reading right away: the reply can only come after the connect completes, and a
        # connect that fails wakes the reader too (POLLERR/POLLHUP), with recv() raising its error.
        fd = sock.fileno()
        watched[fd] = f
        poller.register(fd, select.POLLIN)
        if code not in (0, errno.EINPROGRESS):
            finish(f, _failure(OSError(code, os.strerror(code))))

    def read(f: _InFlight) -> None:
        """Take everything the socket has now; finish on EOF, an error, or a reply that is too long."""
        sock, data = f.sock, f.data
        while True:
            try:
                chunk = sock.recv(MAX_REPLY)
            except BlockingIOError:
                return  # nothing more yet: wait for the next wakeup
            except OSError as exc:
                finish(f, _failure(exc))
                return
            if chunk and len(data) < MAX_REPLY:
                data += chunk
                continue
            finish(f, None)  # EOF: the worker answered and closed
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
            for fd, _ in poller.poll(math.ceil(wait_s * 1000)):
                f = watched.get(fd)
                if f is not None:
                    read(f)
                elif fd in death_fds:
                    target.check_alive()  # a worker exited: raises WorkerError naming it
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
    return [records[i] for i in sorted(records)]
