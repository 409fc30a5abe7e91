"""The client side of `run`: nc-style connections (connect, read the reply line, close), paced.

With gap 0 each connection starts when the previous one has finished, like `for i in $(seq 6); do nc
...; done`. With a gap, connection k starts k*gap after the first whether or not the earlier ones have
finished, so that a slow worker (`--work-ms` > gap) is still busy when the next connection arrives.
Every connection ends as a record: served (by the worker named in the reply) or failed (with the error).

This loop is the harness's hot path (benchmarks/bench_run.py holds it to 0.6 of a C client doing the
same): each socket is made nonblocking at creation, watched with poll() (registering is a dict update,
not an epoll_ctl call), for reading only from the connect on (a failed connect wakes the reader too, and
recv() raises its error), and read until EAGAIN on each wakeup, so that a reply and the close behind it
usually cost one wait instead of three.
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

from .records import ConnectionRecord

MAX_REPLY = 4096
# A nonblocking socket in one system call where the platform has SOCK_NONBLOCK (Linux).
NONBLOCK_FLAG: int = getattr(socket, "SOCK_NONBLOCK", 0)
SOCK_STREAM_NONBLOCK = socket.SOCK_STREAM | NONBLOCK_FLAG


def parse_reply(data: bytes) -> tuple[int, int] | None:
    """`worker 3 pid 1234` -> (3, 1234); None for anything else."""
    parts = data.split()
    if len(parts) >= 4 and parts[0] == b"worker" and parts[2] == b"pid":
        try:
            return int(parts[1]), int(parts[3])
        except ValueError:
            return None
    return None


def error_name(exc: OSError) -> str:
    code = exc.errno
    if code is None:
        return str(exc) or type(exc).__name__
    return f"{errno.errorcode.get(code, str(code))}: {os.strerror(code)}"


@dataclass
class _InFlight:
    seq: int
    sock: socket.socket
    started_ns: int
    data: bytearray = field(default_factory=bytearray)


def drive(
    address: tuple[str, int],
    count: int,
    gap_s: float = 0.0,
    timeout_s: float = 5.0,
    before_each: Callable[[], None] | None = None,
    on_record: Callable[[ConnectionRecord], None] | None = None,
) -> list[ConnectionRecord]:
    """Drive `count` connections at `address`; return one record per connection, in start order."""
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    poller = select.poll()
    watched: dict[int, _InFlight] = {}  # fd -> connection
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
        f.sock.close()
        now = clock()
        parsed = parse_reply(bytes(f.data)) if error is None else None
        if error is None and parsed is None:
            error = "closed without a reply" if not f.data else f"unexpected reply {bytes(f.data[:40])!r}"
        worker, pid = parsed if parsed else (None, None)
        start_us, latency_us = (f.started_ns - t0) // 1000, (now - f.started_ns) // 1000
        rec = ConnectionRecord(f.seq, worker, pid, start_us, latency_us, error)
        records[f.seq] = rec
        if on_record:
            on_record(rec)

    def start(seq: int) -> None:
        try:
            sock = socket.socket(family, SOCK_STREAM_NONBLOCK)
        except OSError as exc:  # e.g. EMFILE: too many connections in flight for the open-file limit
            records[seq] = ConnectionRecord(seq, None, None, (clock() - t0) // 1000, 0, error_name(exc))
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
            finish(f, error_name(OSError(code, os.strerror(code))))

    def read(f: _InFlight) -> None:
        """Take everything the socket has now; finish on EOF, an error, or a reply that is too long."""
        sock, data = f.sock, f.data
        while True:
            try:
                chunk = sock.recv(MAX_REPLY)
            except BlockingIOError:
                return  # nothing more yet: wait for the next wakeup
            except OSError as exc:
                finish(f, error_name(exc))
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
            now = clock()
            while inflight:
                f = next(iter(inflight.values()))
                if now - f.started_ns <= timeout_ns:
                    break  # the oldest still has time, so every later one has too
                finish(f, f"timeout: no answer within {timeout_s:g} s")
    finally:
        # Stopped early (a worker died, Ctrl-C): what was in flight still ends as a record.
        for f in list(inflight.values()):
            finish(f, "aborted: the run stopped before this connection finished")
    return [records[i] for i in sorted(records)]
