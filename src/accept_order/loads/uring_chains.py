"""uring_loop.py's job (drive_loop.py's connections, records and tallies) on PyPI's liburing, one linked chain of
requests per connection, made once per slot and copied into the ring for each connection.

A slot's chain: SOCKET into the slot's place in a table of registered ("direct") descriptors, CONNECT, SEND (if the
protocol sends a request), RECV into the slot's reply buffer and a second RECV for the EOF, linked so that the
kernel runs each when the one before succeeds. Socket, connect and send post nothing when they succeed
(IOSQE_CQE_SKIP_SUCCESS), so a served connection costs the loop one copy of its chain into the ring, one of its
premade close and two completions; the receives' buffers, the address and the request stay where the chain points
at. Every connection is closed at once when it ends, served or not, as a client closes what it has read to its end.
The close posts nothing when it succeeds either, and its slot is free again at once: the close is queued before the
slot's next socket, and the kernel runs both in their order, each to its end, as it takes them from the queue (a
registered descriptor's close and a socket made into the table never wait), so the close cannot meet the next
connection's socket (waiting for the close's completion instead cost every connection a turn of the loop before its
slot was used again). Left to the next connection's socket made in the same place (the kernel replaces a registered
descriptor), a served one's close waited for its slot to come round again (in an open loop's quiet spell or at a
run's end: never), and even then its release (and so its FIN) came up to 2 s late here (Linux 6.18: 4 of 3000
connections, through delayed_fput), while a server that waits for the client's FIN before taking its next connection
(gunicorn 27's sync worker lingers up to 2 s in close_graceful) held the connections behind it that long: a tail at
2, 4 and 6 s that was the load generator's. A timed-out one may still sit in the server's accept queue or a worker,
held open for nothing. Direct descriptors are not in the process's table: only the table's size counts against the
open-file limit (its registration fails with EMFILE beyond it: then uring_loop.py's loop runs, and the kernel's
refusals are counted per connection there).

When a request fails, what follows it in the chain is cancelled: after a skip-success request's failure the
kernel posts nothing for the rest, after the first receive's it posts the second's cancellation. So a
connection ends with a failed socket, connect or send, or with its second receive's completion. When that
one brings bytes (a reply in several segments), receives follow one by one until EOF; past MAX_REPLY bytes,
one byte more tells a reply of exactly MAX_REPLY from a longer one. Not MSG_WAITALL: a reset after the reply
would be lost (uring_loop.py says why). A connection past the timeout has what it has in flight cancelled,
by the user_data of each request it may have in flight (its slot is not reused before its end, so no other
connection's requests carry them; cancelling by registered descriptor would need Linux 6.0).

The ring is set up with IORING_SETUP_DEFER_TASKRUN (6.1+; COOP_TASKRUN before it): the kernel runs the
completions' work when the loop waits for them, in its own call, instead of interrupting it. A completion's
time is read once per batch, when the loop sees it, as uring_loop.py's.
"""

from __future__ import annotations

import errno
import gc
import socket
import time
from collections import Counter
from typing import Any

from ..core.finished import FINISHED_AT, PUBLISHED, SERVED_AT, TIMED_OUT_AT
from ..core.processes import MAX_REPLY
from ..core.protocol import ABORTED, BAD_REPLY, TIMEOUT, errno_name
from ..core.target import KnownReplies
from .driver_clock import DriverClock
from .drivers import chains_binding

# The kernel's values (include/uapi/linux/io_uring.h): liburing 2024.5.3 does not export them to Python.
FIXED_FILE, IO_LINK, CQE_SKIP_SUCCESS = 1 << 0, 1 << 2, 1 << 6
SETUP_COOP_TASKRUN, SETUP_SINGLE_ISSUER, SETUP_DEFER_TASKRUN = 1 << 8, 1 << 12, 1 << 13
NOTHING_YET = (errno.ETIME, errno.EINTR, errno.EAGAIN, errno.EBUSY)  # what a wait may end with, and go on
TAIL = 1024  # the EOF receive's buffer: it mostly gets the EOF alone, and what more comes is received on
RING_MAX = 32768  # the kernel's most submission entries (a fuller queue is submitted before the next chain)
ONE_MORE = bytearray(1)  # the byte past a full reply buffer: only its count is read (never freed under a receive)

# What a completion is, in its user_data's low TAG bits (the slot above them; never 0, which the binding refuses).
SOCKET, CONNECT, SEND, RECV, EOF, MORE, CANCEL, CLOSE = range(1, 9)
TAG, WHAT = 4, 15  # user_data = slot << TAG | what; what = user_data & WHAT


def ring_size(slots: int) -> int:
    """Submission entries for `slots` chains of five and a request more each (a receive, or one of a timeout's
    cancels; a fuller queue is handed to the kernel first), a power of two."""
    size = 64
    while size < min(6 * slots + 8, RING_MAX):
        size *= 2
    return size


def _ring(uring: Any, size: int, slots: int) -> Any:
    """A ring with a sparse table of `slots` registered descriptors, or None where this kernel or the open-file
    limit does not allow one (the caller then runs uring_loop.py's loop)."""
    for flags in (SETUP_SINGLE_ISSUER | SETUP_DEFER_TASKRUN, SETUP_COOP_TASKRUN, 0):
        ring = uring.io_uring()  # one per try: the binding takes a ring whose setup failed for a set-up one
        try:
            uring.io_uring_queue_init(size, ring, flags)
            break
        except OSError:  # EINVAL: a kernel before the flag
            continue
    else:
        return None
    try:
        uring.io_uring_register_files_sparse(ring, slots)
    except OSError:  # EMFILE: more slots than the open-file limit; EINVAL: before 5.19
        uring.io_uring_queue_exit(ring)
        return None
    return ring


def _chains(uring: Any, cfg: Any, family: int, address: Any, buffers: list[tuple[bytearray, bytearray]]) -> list[Any]:
    """Each slot's premade chain (socket, connect, [send], receive, receive to EOF) on its own descriptor."""
    request = cfg.protocol.request
    chains = []
    for slot, (reply, tail) in enumerate(buffers):
        sqes = uring.io_uring_sqe(5 if request else 4)
        steps: list[tuple[int, int]] = []  # (what, flags) in chain order
        uring.io_uring_prep_socket_direct(sqes[0], family, socket.SOCK_STREAM, 0, slot, 0)
        steps.append((SOCKET, IO_LINK | CQE_SKIP_SUCCESS))
        uring.io_uring_prep_connect(sqes[1], slot, address)
        steps.append((CONNECT, FIXED_FILE | IO_LINK | CQE_SKIP_SUCCESS))
        if request:
            uring.io_uring_prep_send(sqes[2], slot, request, len(request), 0)
            steps.append((SEND, FIXED_FILE | IO_LINK | CQE_SKIP_SUCCESS))
        uring.io_uring_prep_recv(sqes[len(steps)], slot, reply, len(reply), 0)
        steps.append((RECV, FIXED_FILE | IO_LINK))
        uring.io_uring_prep_recv(sqes[len(steps)], slot, tail, len(tail), 0)
        steps.append((EOF, FIXED_FILE))
        for i, (what, flags) in enumerate(steps):
            sqes[i].flags = flags
            sqes[i].user_data = slot << TAG | what
        chains.append(sqes)
    return chains


def _closes(uring: Any, slots: int) -> list[Any]:
    """Each slot's premade close of its registered descriptor, posting nothing when it succeeds (put into the ring
    as a chain is, one call instead of four)."""
    closes = []
    for slot in range(slots):
        sqe = uring.io_uring_sqe()
        uring.io_uring_prep_close_direct(sqe, slot)
        sqe.flags = CQE_SKIP_SUCCESS
        sqe.user_data = slot << TAG | CLOSE
        closes.append(sqe)
    return closes


def drive_chains(cfg: Any, progress: Any, stop: Any, tick_s: float) -> dict[str, Any] | None:
    """The loop for drive_loop's DriverConfig `cfg`, returning its tallies as uring_loop.drive_uring does; None
    (before any connection) where the ring or its descriptor table cannot be set up here."""
    uring = chains_binding()
    host, port = cfg.address
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:  # the chains point at it: kept until the loop ends
        address = uring.sockaddr(family, host.encode(), port)
    except ValueError:  # not a numeric address the binding can parse (an IPv6 scope, a name): socket's can
        return None
    slots = cfg.slots
    size = ring_size(slots)
    ring = _ring(uring, size, slots)
    if ring is None:
        return None
    # Each slot's reply buffer and the EOF receive's: the kernel writes into them until the ring is gone, so they
    # outlive it (freed with the loop's frame, a receive still in flight at a stop could write into memory reused)
    buffers = [(bytearray(MAX_REPLY), bytearray(TAIL)) for _ in range(slots)]
    # The loop makes no reference cycles: the collector, run every few hundred of its objects, would only walk the
    # young ones of each batch (2% of the loop's time)
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _loop(uring, ring, size, address, buffers, cfg, progress, stop, tick_s)
    finally:
        if collecting:
            gc.enable()
        uring.io_uring_queue_exit(ring)  # cancels what is in flight; the table's sockets close with the ring


def _loop(
    uring: Any,
    ring: Any,
    size: int,
    address: Any,
    buffers: list[tuple[bytearray, bytearray]],
    cfg: Any,
    progress: Any,
    stop: Any,
    tick_s: float,
) -> dict[str, Any]:
    family = socket.AF_INET6 if ":" in cfg.address[0] else socket.AF_INET
    slots = cfg.slots
    chains = _chains(uring, cfg, family, address, buffers)
    closes = _closes(uring, slots)
    put, get_sqe, submit = uring.io_uring_put_sqe, uring.io_uring_get_sqe, uring.io_uring_submit
    prep_recv, prep_cancel = uring.io_uring_prep_recv, uring.io_uring_prep_cancel64
    submit_and_wait, timespec = uring.io_uring_submit_and_wait_timeout, uring.timespec
    ready_count, peek, advance = uring.io_uring_cq_ready, uring.io_uring_peek_cqe, uring.io_uring_cq_advance
    pending = (CONNECT, SEND, RECV, EOF, MORE) if cfg.protocol.request else (CONNECT, RECV, EOF, MORE)
    cqe = uring.io_uring_cqe()
    tag, tagged = TAG, WHAT  # read for every completion: locals, as fast as literals
    tick_ts = timespec(tick_s)
    # The completion queue holds twice the submission entries; its head counts from 0 (reaped so far), and a
    # batch is read from the head up to the queue's end, then from its start.
    cq_entries = 2 * size
    head = 0
    request, body, failure = cfg.protocol.request, cfg.protocol.body, cfg.protocol.failure
    reply_buffers = [reply for reply, _ in buffers]
    done_at, ok_at = PUBLISHED * cfg.index + FINISHED_AT, PUBLISHED * cfg.index + SERVED_AT  # its places in `progress`
    timed_out_at = PUBLISHED * cfg.index + TIMED_OUT_AT
    counts: dict[int, int] = {}
    errors: Counter[str] = Counter()
    served: dict[int, int] = {}
    replies = KnownReplies(cfg.attribution)
    replies_get = replies.get
    perf_ns = time.perf_counter_ns
    timeout_ns = int(cfg.timeout_s * 1e9)
    tick_ns = int(tick_s * 1e9)
    left = cfg.requests if cfg.requests is not None else -1
    done = ok = 0
    # Per slot: when its connection started (0: none in flight), its first error, ours (timeout), the reply's
    # bytes so far.
    start = [0] * slots
    failed: list[str | None] = [None] * slots
    forced: list[str | None] = [None] * slots
    got = [0] * slots
    free = list(range(slots - 1, -1, -1))
    inflight = 0

    clock = DriverClock()
    deadline, next_check, interval_ns, due_ns, freed_ns = clock.schedule(cfg, tick_ns)  # as drive_loop's
    starting = True
    opened_ns: int | None = None
    late = 0

    def queued() -> Any:
        """A free submission entry, for a connection's next receive or its cancel."""
        sqe = get_sqe(ring)
        if not sqe:  # the queue is full: hand it to the kernel first
            submit(ring)
            sqe = get_sqe(ring)
        return sqe

    while True:
        if starting and (left == 0 or (deadline is not None and perf_ns() >= deadline)):
            starting = False
            opened_ns = perf_ns()
        while starting and free and left != 0:
            if interval_ns:
                if due_ns > perf_ns():
                    break
                late += due_ns <= freed_ns
                due_ns += interval_ns
            left -= 1
            slot = free.pop()
            if not put(ring, chains[slot]):
                submit(ring)
                put(ring, chains[slot])
            start[slot] = due_ns - interval_ns if interval_ns else perf_ns()
            inflight += 1
        if not starting and not inflight:
            break
        wait = tick_ts
        if starting and (deadline is not None or (interval_ns and free)):
            wait_s = tick_s
            if deadline is not None:
                wait_s = min(wait_s, max(0.0, (deadline - perf_ns()) / 1e9))
            if interval_ns and free:
                wait_s = min(wait_s, max(0.0, (due_ns - perf_ns()) / 1e9))
            wait = timespec(wait_s) if wait_s < tick_s else tick_ts
        try:
            submit_and_wait(ring, cqe, 1, wait)
        except OSError as exc:  # nothing to reap yet: ETIME (in time), EINTR or EAGAIN (a signal: see the stop
            if exc.errno not in NOTHING_YET:  # flag below), EBUSY (completions to reap first)
                raise
        now = perf_ns()
        ready = ready_count(ring)
        while ready:
            peek(ring, cqe)  # cqe points at the head
            batch = min(ready, cq_entries - head % cq_entries)
            for i in range(batch):
                entry = cqe[i]
                data = entry.user_data
                res = entry.res
                slot = data >> tag
                what = data & tagged
                if what == RECV:
                    if res >= 0:
                        got[slot] = res
                    elif failed[slot] is None:
                        failed[slot] = errno_name(-res)
                    continue  # the EOF receive follows (or its cancellation)
                if what >= CANCEL:  # a cancel's own completion, or a close that failed (EBADF: the socket was
                    continue  # never made; a done one posts nothing)
                if res > 0 and forced[slot] is None and failed[slot] is None:  # more of the reply (EOF, MORE)
                    so_far = got[slot]
                    total = so_far + res
                    if total > MAX_REPLY:
                        failed[slot] = BAD_REPLY
                    else:
                        reply = buffers[slot][0]
                        if what == EOF:
                            reply[so_far:total] = buffers[slot][1][:res]
                        got[slot] = total
                        sqe = queued()
                        room = memoryview(reply)[total:] if total < MAX_REPLY else ONE_MORE
                        prep_recv(sqe, slot, room, len(room), 0)
                        sqe.flags = FIXED_FILE
                        sqe.user_data = slot << TAG | MORE
                        continue
                elif res < 0 and failed[slot] is None:
                    failed[slot] = errno_name(-res)
                # the connection's end: a failed socket, connect or send, or its last receive
                if inflight >= slots:
                    freed_ns = now
                inflight -= 1
                began = start[slot]
                start[slot] = 0  # idle
                done += 1
                # closed now, not when the slot comes round again (the module doc says why); its completion is
                # not waited for: the close is queued before the slot's next socket, and the kernel runs both in
                # their order, each at once, when they are submitted
                if not put(ring, closes[slot]):
                    submit(ring)
                    put(ring, closes[slot])
                free.append(slot)
                error = forced[slot] or failed[slot]
                if error is not None:
                    forced[slot] = failed[slot] = None
                    errors[error] += 1
                    progress[timed_out_at] = errors[TIMEOUT]  # before its `done`: a failure's cause, never behind it
                    continue
                raw = reply_bytes = bytes(reply_buffers[slot][: got[slot]])
                if request:
                    reply_bytes = body(raw)
                who = replies_get(reply_bytes)
                if who is None:
                    who = replies.learn(reply_bytes)
                    if who is None:
                        errors[failure(raw, reply_bytes)] += 1
                        continue
                served[who] = served.get(who, 0) + 1
                ok += 1
                us = (now - began) // 1000
                counts[us] = counts.get(us, 0) + 1
            advance(ring, batch)
            head += batch
            ready -= batch
        progress[done_at] = done
        progress[ok_at] = ok
        if now >= next_check:
            next_check = now + tick_ns
            if stop.value:  # interrupted: what is still in flight is accounted for as aborted
                if inflight:
                    errors[ABORTED] += inflight
                    done += inflight
                break
            for slot, began in enumerate(start):
                if began and forced[slot] is None and now - began > timeout_ns:
                    forced[slot] = TIMEOUT  # ends once what it has in flight is cancelled
                    for what in pending:  # the one in flight: what follows it in the chain fails with it
                        sqe = queued()
                        prep_cancel(sqe, slot << TAG | what, 0)
                        sqe.user_data = slot << TAG | CANCEL
    try:  # the last connections' closes, queued after their ends: done here, not by the ring's exit (a kworker's)
        submit(ring)
    except OSError:  # the ring's exit closes them all the same
        pass
    return clock.report(cfg, (counts, errors, served), done, opened_ns, late if interval_ns else None, "io_uring")
