"""drive_loop.py's closed (or open) loop on io_uring: the same connections, records and tallies, with the
system calls batched.

A connection is a socket made by the kernel ahead of time (IORING_OP_SOCKET: a few spare ones are always on
order, so a freed slot starts its next connection at once), then its connect, its request (if the protocol
sends one) and a receive, submitted together: the kernel runs them in order. Receives follow one another
until one returns the worker's EOF (the usual reply and its FIN come together: two receives, the second
returned at once); past MAX_REPLY bytes, one byte more tells a reply of exactly MAX_REPLY from a longer one.
Not MSG_WAITALL, which would take the reply in one receive: a reset after the reply would then be lost (the
kernel hands back the bytes and drops the error), where the epoll loop counts ECONNRESET. The socket is
then closed through the ring. One `io_uring_enter` submits and reaps for every connection in flight, where
the epoll loop pays socket, connect, epoll_ctl, recv and close for each; with IORING_SETUP_COOP_TASKRUN
the kernel runs a completion's work when the loop next enters, instead of interrupting it to.

A connection ends when every request it submitted has completed (the kernel may post a refused connect's
completion after its receive's); its error is the first that applies of: ours (timeout, aborted), the
connect's, the request's or the receive's. A connection past the timeout has its requests cancelled.
Each connection's duration runs from its connect's preparation (or, in an open loop, from when it was
due) to the receive's completion, as drive_loop.py's runs from connect to EOF.
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from typing import Any

from ..core.finished import FINISHED_AT, PUBLISHED, SERVED_AT, TIMED_OUT_AT
from ..core.processes import MAX_REPLY
from ..core.protocol import ABORTED, BAD_REPLY, TIMEOUT, errno_name
from ..core.target import KnownReplies
from .driver_clock import DriverClock
from .drivers import binding, chains_unavailable

RING_MAX = 4096  # submission queue entries at most (a batch larger than this is submitted in parts)
SPARE = 8  # sockets kept on order beyond the free slots, so a freed slot need not wait for one
AHEAD_NS = 10_000_000  # an open loop keeps sockets for the connections due this far ahead (and SPARE more)

# An entry (a list, for speed): what one connection holds while it runs.
START, BUF, PENDING, FORCED, CONNECT_ERR, IO_ERR, END, GOT, FD, OPS = range(10)


def ring_size(slots: int) -> int:
    """Submission entries for `slots` connections (four requests each at most), a power of two."""
    size = 64
    while size < min(4 * slots + SPARE, RING_MAX):
        size *= 2
    return size


def drive_uring(cfg: Any, progress: Any, stop: Any, tick_s: float) -> dict[str, Any]:
    """The loop for drive_loop's DriverConfig `cfg`. Returns this driver's tallies as drive_loop._drive does
    (the same keys and stats); `tick_s` is how often it publishes progress and checks its timeouts and the
    stop flag. On liburing's linked chains (loads/uring_chains.py) where they can run, else on uring-api."""
    if chains_unavailable() is None:
        from .uring_chains import drive_chains

        result = drive_chains(cfg, progress, stop, tick_s)
        if result is not None:
            return result
    return drive_uring_api(cfg, progress, stop, tick_s)


def drive_uring_api(cfg: Any, progress: Any, stop: Any, tick_s: float) -> dict[str, Any]:
    """drive_uring's loop on uring-api: a request at a time through the binding's Ring."""
    uring = binding()
    host, port = cfg.address
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    addr = (host, port)
    size = ring_size(cfg.slots)
    try:
        ring = uring.Ring(entries=size, cq_entries=2 * size, flags=uring.IORING_SETUP_COOP_TASKRUN)
    except (OSError, ValueError):  # a kernel without it (before 5.19): completions' work interrupts the loop
        ring = uring.Ring(entries=size, cq_entries=2 * size)
    kind_socket, kind_connect, kind_recv = (
        uring.COMPLETION_KIND_SOCKET,
        uring.COMPLETION_KIND_CONNECT,
        uring.COMPLETION_KIND_RECV,
    )
    prepare_socket, prepare_connect, prepare_recv = ring.prepare_socket, ring.prepare_connect, ring.prepare_recv
    prepare_send, close_fd, wait = ring.prepare_send, ring.prepare_close_nowait, ring.wait
    stream = socket.SOCK_STREAM
    request, body, failure = cfg.protocol.request, cfg.protocol.body, cfg.protocol.failure
    ops_each = 3 if request else 2
    one_more = bytearray(1)  # the byte past a full buffer: only its count is read
    # Reply buffers of connections that ended, for the next ones: a new bytearray(MAX_REPLY) is zeroed, 1 µs
    # per connection. A buffer is free once every request on it has completed (its connection ended).
    free_bufs: list[bytearray] = []
    counts: dict[int, int] = {}
    errors: Counter[str] = Counter()
    served: dict[int, int] = {}
    replies = KnownReplies(cfg.attribution)
    replies_get = replies.get
    perf_ns = time.perf_counter_ns
    timeout_ns = int(cfg.timeout_s * 1e9)
    tick_ns = int(tick_s * 1e9)
    slots = cfg.slots
    left = cfg.requests if cfg.requests is not None else -1
    done = ok = 0
    done_at, ok_at = PUBLISHED * cfg.index + FINISHED_AT, PUBLISHED * cfg.index + SERVED_AT  # its places in `progress`
    timed_out_at = PUBLISHED * cfg.index + TIMED_OUT_AT
    inflight: dict[int, list[Any]] = {}  # fd -> entry
    spare: list[int] = []  # sockets made and not yet connecting
    ordered = 0  # sockets asked for and not yet made
    short = False  # the kernel refused a socket (EMFILE, ENOBUFS): ask again once a connection has ended
    # Why the kernel refused the last socket asked for, since a connection last ended (which may have freed
    # the descriptor it lacked). A refused socket fails a connection only when one needs it and none is
    # spare or on order, as drive_loop's socket() fails one: refused spare sockets are no connections.
    refused: str | None = None
    # Connections ended so far: a socket carries the count it was asked for at, so that a refusal that
    # came before the close of one ended since (submitted after it) is not taken for a lack of descriptors.
    ended = 0

    clock = DriverClock()
    deadline, next_check, interval_ns, due_ns, freed_ns = clock.schedule(cfg, tick_ns)  # as drive_loop's
    starting = True
    opened_ns: int | None = None
    late = 0
    try:
        while True:
            if starting and (left == 0 or (deadline is not None and perf_ns() >= deadline)):
                starting = False
                opened_ns = perf_ns()
            while starting and len(inflight) < slots and left != 0:
                failed = None if spare or ordered else refused  # the kernel refused the socket it needs
                if not spare and failed is None:
                    break  # its socket is still on order
                if interval_ns:
                    if due_ns > perf_ns():
                        break
                    late += due_ns <= freed_ns
                    due_ns += interval_ns
                left -= 1
                if failed is not None:  # counted once: the next fails only if the next socket is refused too
                    errors[failed] += 1
                    done += 1
                    refused = None
                    break
                fd = spare.pop()
                buf = free_bufs.pop() if free_bufs else bytearray(MAX_REPLY)
                entry: list[Any] = [
                    due_ns - interval_ns if interval_ns else perf_ns(),
                    buf,
                    ops_each,
                    None,
                    None,
                    None,
                    0,
                    0,
                    fd,
                    None,
                ]
                connect = prepare_connect(fd, addr, entry)
                sent = prepare_send(fd, request, 0, entry) if request else None
                entry[OPS] = [connect, sent, prepare_recv(fd, buf, 0, entry)]
                inflight[fd] = entry
            if short and not inflight:
                short = False  # nothing in flight to end and free a descriptor: try again (and count it)
            if starting and not short:
                # sockets on order for every slot that will want one, and a few more
                want = slots - len(inflight)
                if interval_ns:  # an open loop: for what is due soon, not one socket per slot it may never fill
                    want = min(want, AHEAD_NS // interval_ns)
                want += SPARE
                if left >= 0:
                    want = min(want, left)
                for _ in range(want - len(spare) - ordered):
                    prepare_socket(family, stream, 0, 0, ended)
                    ordered += 1
            if not starting and not inflight and not ordered:
                break
            wait_s = tick_s
            if starting and deadline is not None:
                wait_s = min(wait_s, max(0.0, (deadline - perf_ns()) / 1e9))
            if starting and interval_ns and spare and len(inflight) < slots:
                wait_s = min(wait_s, max(0.0, (due_ns - perf_ns()) / 1e9))
            try:
                batch = wait(wait_s)
            except InterruptedError:  # a signal (driver_main's SIGTERM sets the stop flag): on to the check
                batch = None
            # One clock reading for the batch: each of its completions was posted before the wait returned,
            # and this is the first moment the loop can see it (as the epoll loop's reading after its recv).
            now = perf_ns()
            for completion in batch or ():
                kind = completion.kind
                res = completion.res
                if kind == kind_socket:
                    ordered -= 1
                    if res >= 0:
                        spare.append(res)
                        refused = None
                    elif completion.take_user_data() == ended:  # no descriptor freed since: one that
                        refused = errno_name(-res)  # needs it fails (above); ask again once one has ended
                        short = True
                    continue
                entry = completion.take_user_data()
                if entry is None:
                    continue  # a cancel's own completion
                if res < 0:
                    if kind == kind_connect:
                        entry[CONNECT_ERR] = errno_name(-res)
                    elif entry[IO_ERR] is None:
                        entry[IO_ERR] = errno_name(-res)
                elif kind == kind_recv:
                    got = entry[GOT]
                    if res and got == MAX_REPLY:  # the byte past a full buffer: there is more than MAX_REPLY
                        entry[IO_ERR] = BAD_REPLY
                    elif res and entry[FORCED] is None:  # more of the reply: the next receive, to the EOF
                        got += res
                        entry[GOT] = got
                        room = memoryview(entry[BUF])[got:] if got < MAX_REPLY else one_more
                        entry[OPS][2] = prepare_recv(entry[FD], room, 0, entry)
                        continue
                    entry[END] = now
                pending = entry[PENDING] - 1
                if pending:
                    entry[PENDING] = pending
                    continue
                fd = entry[FD]
                del inflight[fd]
                close_fd(fd)
                short = False
                refused = None
                ended += 1
                if len(inflight) + 1 >= slots:
                    freed_ns = entry[END] or now
                done += 1
                buf = entry[BUF]
                free_bufs.append(buf)
                error = entry[FORCED] or entry[CONNECT_ERR] or entry[IO_ERR]
                if error is not None:
                    errors[error] += 1
                    progress[timed_out_at] = errors[TIMEOUT]  # before its `done`: a failure's cause, never behind it
                    continue
                raw = reply = bytes(buf[: entry[GOT]])
                if request:
                    reply = body(raw)
                who = replies_get(reply)
                if who is None:
                    who = replies.learn(reply)
                    if who is None:
                        errors[failure(raw, reply)] += 1
                        continue
                served[who] = served.get(who, 0) + 1
                ok += 1
                us = (entry[END] - entry[START]) // 1000
                counts[us] = counts.get(us, 0) + 1
            progress[done_at] = done
            progress[ok_at] = ok
            if now >= next_check:
                next_check = now + tick_ns
                if stop.value:  # interrupted: what is still in flight is accounted for as aborted
                    if inflight:
                        errors[ABORTED] += len(inflight)
                        done += len(inflight)
                    break
                for entry in inflight.values():
                    if entry[FORCED] is None and now - entry[START] > timeout_ns:
                        entry[FORCED] = TIMEOUT  # ends once its requests are cancelled
                        for op in entry[OPS]:
                            if op is not None:
                                ring.prepare_cancel(op)
    finally:
        _shut(ring, ordered, [*inflight, *spare])
    return clock.report(cfg, (counts, errors, served), done, opened_ns, late if interval_ns else None, "io_uring")


def _shut(ring: Any, ordered: int, fds: list[int]) -> None:
    """Close the ring and every socket still ours: `fds`, and those the kernel made for the `ordered` sockets
    whose completions were not reaped. The closes prepared since the last waitable entry are submitted first:
    wait() flushes the queue only for an entry that completes, and a closed ring drops what was not."""
    kind_socket = binding().COMPLETION_KIND_SOCKET
    try:
        ring.submit()
        while ordered > 0:  # a socket is made at once: its completion is there or soon will be
            batch = ring.wait(1.0)
            if not batch:
                break
            for completion in batch:
                if completion.kind == kind_socket:
                    ordered -= 1
                    if completion.res >= 0:
                        fds.append(completion.res)
    except OSError:
        pass  # the ring is unusable: the process's exit closes what is left
    finally:
        ring.close()  # cancels what is still in flight; the sockets are ours to close
        for fd in fds:
            _close(fd)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
