"""The client side of `run`: nc-style connections (connect, read the reply line, close), paced.

With gap 0 each connection starts when the previous one has finished, like `for i in $(seq 6); do nc
...; done`. With a gap, connection k starts k*gap after the first whether or not the earlier ones have
finished, so that a slow worker (`--work-ms` > gap) is still busy when the next connection arrives.
Every connection ends as a record: served (by the worker named in the reply) or failed (with the error).
"""

from __future__ import annotations

import errno
import os
import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .records import ConnectionRecord

MAX_REPLY = 4096


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
    connected: bool = False
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
    sel = selectors.DefaultSelector()
    records: dict[int, ConnectionRecord] = {}
    inflight: dict[int, _InFlight] = {}
    t0 = time.perf_counter_ns()
    next_seq = 0

    def finish(f: _InFlight, error: str | None) -> None:
        inflight.pop(f.seq, None)
        try:
            sel.unregister(f.sock)
        except KeyError:
            pass
        f.sock.close()
        now = time.perf_counter_ns()
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
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        f = _InFlight(seq, sock, time.perf_counter_ns())
        inflight[seq] = f
        code = sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS):
            finish(f, error_name(OSError(code, os.strerror(code))))
            return
        f.connected = code == 0
        sel.register(sock, selectors.EVENT_READ if f.connected else selectors.EVENT_WRITE, f)

    try:
        while next_seq < count or inflight:
            now = time.perf_counter_ns()
            due = t0 + int(next_seq * gap_s * 1e9)
            ready_to_start = next_seq < count and (inflight == {} if gap_s <= 0 else now >= due)
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
                oldest = min(f.started_ns for f in inflight.values())
                wait_s = min(wait_s, max(0.0, (oldest + timeout_s * 1e9 - now) / 1e9))
            for key, _ in sel.select(wait_s):
                f = key.data
                if not f.connected:
                    code = f.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if code:
                        finish(f, error_name(OSError(code, os.strerror(code))))
                        continue
                    f.connected = True
                    sel.modify(f.sock, selectors.EVENT_READ, f)
                    continue
                try:
                    chunk = f.sock.recv(MAX_REPLY)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    finish(f, error_name(exc))
                    continue
                if chunk and len(f.data) < MAX_REPLY:
                    f.data += chunk
                    continue
                finish(f, None)  # EOF: the worker answered and closed
            now = time.perf_counter_ns()
            for f in [f for f in inflight.values() if now - f.started_ns > timeout_s * 1e9]:
                finish(f, f"timeout: no answer within {timeout_s:g} s")
    finally:
        for f in list(inflight.values()):
            sel.unregister(f.sock)
            f.sock.close()
        sel.close()
    return [records[i] for i in sorted(records)]
