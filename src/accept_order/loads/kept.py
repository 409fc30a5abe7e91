"""One driver's loop when a connection carries several requests (requests_per_connection != 1) or the load
is a pool: the connections stay open, and requests go over them one at a time.

A connection sends a request, waits for the whole reply (framed by the protocol, `reply_end`: a line, or an
HTTP head and its Content-Length), and is then free for the next request: at once in a closed loop, when the
next one is due in an open loop. After K requests (K > 0) the client closes it and the slot opens a new one;
with K = 0 it lives until the load ends. Each *request's* time goes into the histogram (and into its worker's
own), from when it was sent (or due, in an open loop) to its reply's end; a connection's first request also
waits for the connect.

Who served a request is read from its own reply; a connection is counted for the worker its first reply
names (the worker that accepted it), and its first request's time is kept apart from its later ones' (it also
waited to be accepted: loads/kept_tally.py). At the load's end the loop counts, per worker, the connections it
still holds (one still waiting for its first reply then is named by that reply, as the loop drains).

A server may end a kept connection first, as a real HTTP client expects it to: a reply that says
`Connection: close` is served, and the client closes that connection; a kept connection the server closes
(EOF or a reset) between two replies, idle or with the next request just sent and no byte of its reply come,
is counted for the worker that held it, and a request under way on it is sent again on a new connection,
once (as HTTP clients retry an idempotent request on a connection the server closed while idle; Apache's
event MPM closes idle ones when a child runs short of connection slots, lighttpd after 65,535 requests, granian
after 60 s idle). Either way the connection's remaining requests go over a new one (a pool keeps its size),
accepted by whichever worker the kernel picks. A close in the middle of a reply, or before a connection's
first reply, is a failure.

The pool shape: the driver's connections are opened one after another at idle, each once its first reply
has named its worker, as a proxy fills its pool; the drivers take turns (a shared counter), so the whole pool
fills in one order; requests then run over it once every driver has filled its share. A first reply that
does not come within the timeout (a worker that serves each connection to its end, all of them busy) stops
the driver's filling: what it opened is its pool, the rest are never opened (the report says
how many the pool holds of those it was to open). The load's time (wall, CPU, --duration, an open loop's
schedule) starts once the whole pool is open; the fill's seconds are reported apart.

Kept apart from drive_loop.py's one-request loop, which is tuned to keep up with a C client: this loop's
bookkeeping per request would slow it down.
"""

from __future__ import annotations

import _socket
import errno
import select
import socket
import time
from collections import Counter, deque
from typing import Any

from ..core.finished import FINISHED_AT, PUBLISHED, SERVED_AT, TIMED_OUT_AT
from ..core.measures import DriverStats
from ..core.processes import MAX_REPLY
from ..core.protocol import ABORTED, BAD_REPLY, NO_REPLY, TIMEOUT, errno_name
from ..core.target import KnownReplies
from .driver_clock import schedule
from .kept_owners import UNNAMED, holders
from .kept_pool import wait_all_filled, wait_turn
from .kept_tally import KeptTally

# A connection's fields (a list: fewer allocations than an object per connection). DONE: requests counted
# against K (carried over to the connection that replaces one the server ended); REPLIES: replies on this socket.
# FIRST_US: its first reply's duration (a holder found after the fill takes it over: kept_owners.py).
SOCK, WORKER, DONE, STARTED, BUF, CONNECTING, REPLIES, FIRST_US = range(8)
# How a server's close of a kept connection shows: EOF on a read, a reset on a read, a send after its reset.
CLOSED = frozenset({NO_REPLY, "ECONNRESET", "EPIPE"})


def drive_kept(cfg: Any, progress: Any, stop: Any, turn: Any, schedstat: Any, tick_s: float) -> dict[str, Any]:
    """The loop for kept connections; `cfg` a DriverConfig, `turn` the pool's shared counter (the index of
    the driver whose turn it is to fill), `schedstat` drive_loop's reader of this process's run-queue time."""
    host, port = cfg.address
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock_type = socket.SOCK_STREAM | socket.SOCK_NONBLOCK
    addr = (host, port)
    ep = select.epoll()
    flags = select.EPOLLIN | select.EPOLLRDHUP
    protocol = cfg.protocol
    request, body, reply_end, complaint = protocol.request, protocol.body, protocol.reply_end, protocol.complaint
    closes = protocol.closes
    per = cfg.per_connection  # 0: no limit
    conns: dict[int, list[Any]] = {}
    idle: deque[int] = deque()  # open connections with no request outstanding, oldest first
    tally = KeptTally()  # per worker: requests, connections accepted, durations (first requests apart)
    errors: Counter[str] = Counter()
    replies = KnownReplies(cfg.attribution)
    closed_by: dict[int, int] = {}  # worker -> kept connections the server closed between replies
    told: dict[int, int] = {}  # worker -> replies that said Connection: close before the connection's last
    carried: deque[int] = deque()  # DONE of connections the server ended: the next new ones carry it on
    resent = 0  # requests sent again on a new connection after the server closed theirs
    perf_ns = time.perf_counter_ns
    timeout_ns = int(cfg.timeout_s * 1e9)
    tick_ns = int(tick_s * 1e9)
    slots = cfg.slots
    left = cfg.requests if cfg.requests is not None else -1
    state = {"done": 0, "ok": 0}
    # Open when the load ended, each named by its first reply: one still waiting for it then (in a busy worker's
    # queue) is held to the end too, named as the loop drains (nginx reuseport: 9 of a worker's 35 were, read 26)
    open_at_end: list[list[Any]] = []
    opened = 0  # pool: connections opened and answered while filling
    planned = slots  # pool: connections it was to open

    def publish() -> None:
        progress[PUBLISHED * cfg.index + FINISHED_AT] = state["done"]
        progress[PUBLISHED * cfg.index + SERVED_AT] = state["ok"]

    def open_one(start: int, done: int | None = None) -> int | None:
        """A new connection with its first request on its way once connected; its fd, or None (counted).
        `done`: requests counted against K already (a re-sent request's connection's); else a carried count."""
        if done is None:
            done = carried.popleft() if carried else 0
        try:
            s = _socket.socket(family, sock_type)
        except OSError as exc:
            errors[errno_name(exc.errno or 0)] += 1
            state["done"] += 1
            return None
        code = s.connect_ex(addr)
        if code not in (0, errno.EINPROGRESS):
            s.close()
            errors[errno_name(code)] += 1
            state["done"] += 1
            return None
        fd = s.fileno()
        ep.register(fd, flags | select.EPOLLOUT)
        conns[fd] = [s, None, done, start, b"", True, 0, 0]
        return fd

    def send(fd: int, start: int) -> bool:
        c = conns[fd]
        c[STARTED] = start
        try:
            c[SOCK].send(request)
        except OSError as exc:
            fail(fd, errno_name(exc.errno or 0))
            return False
        return True

    def close(fd: int) -> None:
        c = conns.pop(fd)
        c[SOCK].close()  # also takes it out of the epoll set

    def fail(fd: int, error: str) -> None:
        c = conns[fd]
        if error in CLOSED and c[REPLIES] and not c[BUF]:
            ended(fd)  # the server closed a kept connection between two replies: no failure
            return
        if c[STARTED]:
            errors[error] += 1
            state["done"] += 1
        close(fd)

    def ended(fd: int) -> None:
        """The server closed `fd` after a reply, before any byte of the next: counted for the worker that held
        it; a request under way goes again over a new connection (whose close before its first reply is a
        failure: sent once more only), keeping its start; idle, its remaining requests wait for a new one."""
        nonlocal resent
        c = conns[fd]
        closed_by[c[WORKER]] = closed_by.get(c[WORKER], 0) + 1
        start, done = c[STARTED], c[DONE]
        close(fd)
        if not start:
            try:
                idle.remove(fd)  # rare (a close), so a scan: a later connection may get the same fd number
            except ValueError:
                pass
            if per:
                carried.append(done)
            return
        resent += 1
        open_one(start, done)

    def answered(fd: int, end: int) -> bool:
        """Read what came in on `fd`; True when a whole reply was read (the connection is then idle)."""
        c = conns[fd]
        try:
            chunk = c[SOCK].recv(MAX_REPLY)
        except BlockingIOError:
            return False
        except OSError as exc:
            fail(fd, errno_name(exc.errno or 0))
            return False
        if not chunk:  # the server closed it: a failure if a request was waiting for its answer
            fail(fd, NO_REPLY)
            return False
        c[BUF] += chunk
        n = reply_end(c[BUF])
        if not n:
            if len(c[BUF]) > MAX_REPLY:
                fail(fd, f"{BAD_REPLY} (no end found in {MAX_REPLY} bytes)")
            return False
        reply, c[BUF] = c[BUF][:n], c[BUF][n:]
        buf = body(reply)
        who = replies.get(buf)
        if who is None:
            who = replies.learn(buf)
            if who is None:
                fail(fd, complaint(reply))
                return False
        c[REPLIES] += 1
        if who == UNNAMED and c[WORKER] is not None:
            who = c[WORKER]  # its holder, where found after the fill (kept_owners.py); else still unnamed
        first = c[WORKER] is None
        us = (end - c[STARTED]) // 1000
        if first:
            c[WORKER], c[FIRST_US] = who, us
        tally.reply(who, us, first)
        c[STARTED] = 0
        c[DONE] += 1
        state["done"] += 1
        state["ok"] += 1
        if per and c[DONE] >= per:
            close(fd)
            return False
        if closes(reply):  # served; the rest of the connection's requests go over a new one
            told[who] = told.get(who, 0) + 1
            if per:
                carried.append(c[DONE])
            close(fd)
            return False
        return True

    def handle(fd: int, ev: int, end: int) -> bool:
        """One event on `fd`; True when the connection became idle."""
        c = conns.get(fd)
        if c is None:
            return False
        if ev & select.EPOLLERR:
            code = c[SOCK].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            fail(fd, errno_name(code) if code else "EPOLLERR")
            return False
        if c[CONNECTING]:
            if not ev & select.EPOLLOUT:
                return False
            c[CONNECTING] = False
            ep.modify(fd, flags)
            try:
                c[SOCK].send(request)
            except OSError as exc:
                fail(fd, errno_name(exc.errno or 0))
            return False
        return answered(fd, end)

    def expire(now: int) -> None:
        for fd in [fd for fd, c in conns.items() if c[STARTED] and now - c[STARTED] > timeout_ns]:
            fail(fd, TIMEOUT)
        progress[PUBLISHED * cfg.index + TIMED_OUT_AT] = errors[TIMEOUT]  # once a tick, off the hot path

    # The fill's window too, for a driver that then carries no load (its figures are its whole life's)
    began = (schedstat(), time.monotonic(), time.process_time())
    stopped = False
    try:
        if cfg.pool:
            stopped = wait_turn(turn, cfg.index, stop)
            for _ in range(0 if stopped else slots):
                if left == 0:
                    break
                ok = state["ok"]
                fd = open_one(perf_ns())
                left -= 1 if left > 0 else 0
                while fd is not None and fd in conns and conns[fd][STARTED] and not stop.value:
                    for efd, ev in ep.poll(tick_s):
                        if handle(efd, ev, perf_ns()):
                            idle.append(efd)
                    expire(perf_ns())
                    publish()
                if state["ok"] == ok:  # (answered with Connection: close, it was opened and closed: it counts)
                    break  # no first answer: the rest of this driver's share is never opened
                opened += 1
            turn.value += 1
            # the pool is what it holds: a connection is opened again only in place of a closed one
            planned, slots = slots, opened
            stopped = wait_all_filled(turn, cfg.procs, stop) or stopped  # every driver's share open: the load
            if not stopped:  # replies that name no worker: each connection's holder, found once it is accepted
                for fd, owner in holders(cfg.attribution, {fd: c[SOCK] for fd, c in conns.items()}).items():
                    if conns[fd][WORKER] == UNNAMED:
                        conns[fd][WORKER] = owner
                        tally.place(conns[fd][FIRST_US], owner)  # its first reply, and the connection, are the holder's
        # The load's time starts once the whole pool is open (every driver's share): its rates, its CPU and
        # its --duration count from here, and the fill keeps its own time (one that waits out a timeout
        # took 10 s before a 2 s load here, and counted in its rate). The CPU window sits inside the wall's.
        sched0 = schedstat()
        wall0 = time.monotonic()
        cpu0 = time.process_time()
        fill_s = wall0 - began[1]
        begin = perf_ns()
        deadline, next_check, interval_ns, due_ns, freed_ns = schedule(cfg, tick_ns, begin)  # as drive_loop's
        late = 0
        starting = not stopped and not (cfg.pool and not opened)  # a pool that opened nothing carries nothing
        ran = starting
        if not ran:  # no load to time: timed over its whole life, as a window of none reads any CPU as busy
            sched0, wall0, cpu0 = began
        opened_ns: int | None = None
        while True:
            now = perf_ns()
            if starting and (left == 0 or (deadline is not None and now >= deadline)):
                starting = False
                opened_ns = now
                open_at_end = list(conns.values())
                for fd in idle:  # nothing more to send on them
                    if fd in conns:
                        close(fd)
                idle.clear()
            while starting and left != 0:
                if interval_ns:
                    if due_ns > perf_ns():
                        break
                while idle and idle[0] not in conns:
                    idle.popleft()
                if not idle and len(conns) >= slots:
                    break  # every connection busy (or the pool has none): the next waits for one
                if interval_ns:
                    late += due_ns <= freed_ns
                start = due_ns if interval_ns else perf_ns()
                if interval_ns:
                    due_ns += interval_ns
                left -= 1 if left > 0 else 0
                if idle:
                    send(idle.popleft(), start)
                else:
                    open_one(start)
            if not starting and not any(c[STARTED] for c in conns.values()):
                break
            wait_s = tick_s
            if starting and deadline is not None:
                wait_s = min(wait_s, max(0.0, (deadline - perf_ns()) / 1e9))
            # the next request can start when due: on an idle connection, or on a new one in place of one closed
            # (the load's first, a connection's after K requests); else it waits for a reply, as drive_loop's
            if starting and interval_ns and (idle or len(conns) < slots):
                wait_s = min(wait_s, max(0.0, (due_ns - perf_ns()) / 1e9))
            for fd, ev in ep.poll(wait_s):
                end = perf_ns()
                busy = not idle and len(conns) >= slots
                if handle(fd, ev, end):
                    if not starting:  # nothing more to send on it: closed now, so that a worker that serves
                        close(fd)  # each connection to its end can take one that waits in the queue
                        continue
                    idle.append(fd)
                    if busy:
                        freed_ns = end
            publish()
            now = perf_ns()
            if now >= next_check:
                next_check = now + tick_ns
                if stop.value:
                    waiting = sum(1 for c in conns.values() if c[STARTED])
                    if waiting:  # nothing under way: no failure, and no cause counted 0
                        errors[ABORTED] += waiting
                        state["done"] += waiting
                    if starting:
                        open_at_end = list(conns.values())
                    break
                expire(now)
    finally:
        for c in conns.values():
            c[SOCK].close()
        ep.close()
    publish()
    held_end = dict(Counter(c[WORKER] for c in open_at_end if c[WORKER] is not None))
    cpu = time.process_time() - cpu0
    wall = time.monotonic() - wall0
    sched1 = schedstat()
    runqueue = (sched1[1] - sched0[1]) / 1e9 if sched0 and sched1 else None
    report: dict[str, Any] = tally.report() | {
        "errors": dict(errors),
        "held": held_end,
        "server_closed": closed_by,
        "told_close": told,
        "resent": resent,
        "start": wall0,
        "end": wall0 + wall,
        "ran": ran,  # a driver that carried no load (stopped while filling, or opened no pool): none of the load's time
        "stats": DriverStats(
            cfg.index,
            cfg.slots,
            state["done"],
            round(wall, 6),
            round(cpu, 6),
            runqueue,
            None if opened_ns is None else round((opened_ns - begin) / 1e9, 6),
            late if cfg.rate else None,
            "epoll",
        ).to_dict(),
    }
    if cfg.pool:
        report["pool"] = {"planned": planned, "opened": opened, "fill_s": round(fill_s, 6)}
    return report
