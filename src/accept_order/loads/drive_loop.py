"""One load-generator process ("driver"): a hand-written nonblocking epoll loop over its share of slots.

A slot runs one connection at a time, like `benchhttp -c`: a new connection (nonblocking connect), read
the worker's reply to EOF, close, and start the next one at once. Each connection's duration (connect to
EOF) goes into an exact integer-microsecond histogram, so memory is bounded by the number of distinct
durations, not of connections. Every connection ends served (attributed to a worker) or failed (keyed by
errno name). The driver measures how much of its wall time it spent on a CPU and how much runnable but
waiting for one (/proc/self/schedstat), so a result can say when the client side set the pace.
"""

from __future__ import annotations

import _socket
import errno
import os
import select
import signal
import socket
import time
from collections import Counter
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from ..core.finished import FINISHED_AT, PUBLISHED, SERVED_AT, TIMED_OUT_AT
from ..core.processes import MAX_REPLY, READY_TIMEOUT_S, die_with_parent, ignore_supervisor_signals, unblock_signals
from ..core.protocol import ABORTED, BAD_REPLY, TIMEOUT, ClientProtocol, errno_name
from ..core.target import Attribution, KnownReplies
from .driver_clock import DriverClock, schedstat
from .drivers import Loop

TICK_S = 0.1  # how often a driver publishes progress and checks its timeouts and the stop flag


@dataclass(frozen=True)
class DriverConfig:
    index: int
    address: tuple[str, int]
    attribution: Attribution
    protocol: ClientProtocol
    requests: int | None  # this driver's share of the requests; None: until the deadline
    duration_s: float | None
    slots: int
    timeout_s: float
    rate: float | None = None  # open loop: this driver's connections per second; None: closed loop
    cpus: tuple[int, ...] = ()  # pinned to these CPUs (--load-cpus); empty: wherever the scheduler puts it
    per_connection: int = 1  # requests over each connection (0: for the whole run); not 1: loads/kept.py's loop
    pool: bool = False  # open the connections one after another first (loads/kept.py)
    procs: int = 1  # drivers of the load (the pool's fill takes turns over them)
    loop: Loop = "epoll"  # this loop, or loads/uring_loop.py's (loads/drivers.py resolved it)
    # An open loop: how long after the start this driver's first connection is due (driver i of a load at R/s:
    # i/R), so that the drivers' arrivals interleave instead of coming in bunches of --driver-procs at once
    offset_s: float = 0.0

    @property
    def kept(self) -> bool:
        """Whether connections stay open for several requests (loads/kept.py), not one each (this loop)."""
        return self.per_connection != 1 or self.pool  # as ConcurrentLoad.keeps_connections


def _drive(cfg: DriverConfig, progress: Any, stop: Any) -> dict[str, Any]:
    """The closed loop. Returns this driver's tallies as plain data for the pipe.

    Written for speed (it must keep up with C): `_socket.socket` skips socket.socket's Python-level
    __init__ and close(); a reply that arrives with the peer's FIN (EPOLLRDHUP) is finished after one
    recv instead of a second recv that would only return EOF. `stop` (shared with the parent) ends the
    loop early, at the next tick: the parent was interrupted and wants what was measured so far.
    """
    host, port = cfg.address
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock_type = socket.SOCK_STREAM | socket.SOCK_NONBLOCK  # nonblocking without a second syscall
    new_socket = _socket.socket
    addr = (host, port)
    ep = select.epoll()
    register = ep.register
    flags = select.EPOLLIN | select.EPOLLRDHUP
    epollerr = select.EPOLLERR
    peer_closed = select.EPOLLRDHUP | select.EPOLLHUP
    inflight: dict[int, list[Any]] = {}  # fd -> [socket, start ns, reply bytes so far, request unsent]
    request, body, failure = cfg.protocol.request, cfg.protocol.body, cfg.protocol.failure
    start_flags = flags | select.EPOLLOUT if request else flags  # a request waits for the connect
    modify = ep.modify
    counts: dict[int, int] = {}  # duration us -> requests (the histogram, built at the end)
    errors: Counter[str] = Counter()
    served: dict[int, int] = {}
    replies = KnownReplies(cfg.attribution)  # reply line -> worker index: attribute each worker's line once
    perf_ns = time.perf_counter_ns
    einprogress = errno.EINPROGRESS
    timeout_ns = int(cfg.timeout_s * 1e9)
    tick_ns = int(TICK_S * 1e9)
    slots = cfg.slots
    left = cfg.requests if cfg.requests is not None else -1  # requests still to start; -1: no count
    done = ok = 0  # finished, and of those served: published for the parent's progress and messages
    done_at, ok_at = PUBLISHED * cfg.index + FINISHED_AT, PUBLISHED * cfg.index + SERVED_AT  # its places in `progress`
    timed_out_at = PUBLISHED * cfg.index + TIMED_OUT_AT

    clock = DriverClock()
    # Open loop: connection k is due at its first due time + k*interval; it starts then (or when a slot frees,
    # late) and its time is counted from when it was due. freed_ns: when a connection last ended with every
    # slot busy. Connections start in due order, so one due before then found every slot busy when it was due
    # (in flight only fell from then until that end).
    deadline, next_check, interval_ns, due_ns, freed_ns = clock.schedule(cfg, tick_ns)
    starting = True
    opened_ns: int | None = None
    late = 0  # open loop: connections started late because every slot was busy when they were due
    try:
        while True:
            if starting and (left == 0 or (deadline is not None and perf_ns() >= deadline)):
                starting = False
                opened_ns = perf_ns()
            while starting and len(inflight) < slots and left != 0:
                if interval_ns:
                    if due_ns > perf_ns():
                        break
                    late += due_ns <= freed_ns
                    due_ns += interval_ns
                left -= 1
                try:
                    s = new_socket(family, sock_type)
                except OSError as exc:  # EMFILE/ENFILE/ENOBUFS: count it, retry after in-flight ones end
                    errors[errno_name(exc.errno or 0)] += 1
                    done += 1
                    break
                start = due_ns - interval_ns if interval_ns else perf_ns()
                code = s.connect_ex(addr)
                if code == einprogress or code == 0:
                    fd = s.fileno()
                    register(fd, start_flags)
                    inflight[fd] = [s, start, b"", bool(request)]
                else:  # refused at once, no local port left (EADDRNOTAVAIL), ...
                    s.close()
                    errors[errno_name(code)] += 1
                    done += 1
            if not starting and not inflight:
                break
            wait_s = TICK_S
            if starting and deadline is not None:
                wait_s = min(wait_s, max(0.0, (deadline - perf_ns()) / 1e9))
            if starting and interval_ns:
                # Every slot busy: the next starts when one ends (waiting for its due time instead would spin
                # at 0 s once it is past, taking a CPU from the workers the load is waiting for).
                if len(inflight) < slots:
                    wait_s = min(wait_s, max(0.0, (due_ns - perf_ns()) / 1e9))
            for fd, ev in ep.poll(wait_s):
                entry = inflight.get(fd)
                if entry is None:
                    continue
                s = entry[0]
                error: str | None = None
                if entry[3] and not ev & epollerr:  # connected: send the request, then wait for the reply
                    try:
                        s.send(request)
                    except OSError as exc:
                        error = errno_name(exc.errno or 0)
                    else:
                        entry[3] = False
                        modify(fd, flags)
                        continue
                elif ev & epollerr:
                    code = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    error = errno_name(code) if code else "EPOLLERR"
                else:
                    try:
                        chunk = s.recv(MAX_REPLY)
                    except BlockingIOError:
                        continue
                    except OSError as exc:  # ECONNRESET, ...
                        error = errno_name(exc.errno or 0)
                    else:
                        if chunk:
                            entry[2] += chunk
                            if len(entry[2]) > MAX_REPLY:  # also when its last part came with the FIN
                                error = BAD_REPLY
                            # With the FIN already in, that recv got everything the worker sent.
                            elif not (ev & peer_closed) or len(chunk) == MAX_REPLY:
                                continue  # the rest of the reply, or its EOF, is still to come
                end = perf_ns()
                if len(inflight) >= slots:
                    freed_ns = end
                del inflight[fd]
                s.close()  # also takes it out of the epoll set
                done += 1
                if error is not None:
                    errors[error] += 1
                    continue
                buf = body(entry[2]) if request else entry[2]
                who = replies.get(buf)
                if who is None:
                    who = replies.learn(buf)
                    if who is None:
                        errors[failure(entry[2], buf)] += 1
                        continue
                served[who] = served.get(who, 0) + 1
                ok += 1
                us = (end - entry[1]) // 1000
                counts[us] = counts.get(us, 0) + 1
            progress[done_at] = done
            progress[ok_at] = ok
            now = perf_ns()
            if now >= next_check:
                next_check = now + tick_ns
                if stop.value:  # interrupted: what is still in flight is accounted for as aborted
                    if inflight:  # none in flight: no failure, and no cause counted 0
                        errors[ABORTED] += len(inflight)
                        done += len(inflight)
                    break
                for fd, entry in [(fd, e) for fd, e in inflight.items() if now - e[1] > timeout_ns]:
                    if len(inflight) >= slots:
                        freed_ns = now
                    del inflight[fd]
                    entry[0].close()
                    errors[TIMEOUT] += 1
                    done += 1
                # published at once, the cause before the count: a tick behind, the heartbeat read 'N failed
                # (N-4 timed out)' where every one had timed out
                progress[timed_out_at] = errors[TIMEOUT]
                progress[done_at] = done
    finally:
        for entry in inflight.values():
            entry[0].close()
        ep.close()
    return clock.report(cfg, (counts, errors, served), done, opened_ns, late if interval_ns else None, "epoll")


STOP, ABORT = 1, 2  # values of the shared stop flag: report what you have / the parent wants you gone


def driver_main(cfg: DriverConfig, pipe: Connection, go: Any, progress: Any, stop: Any, turn: Any = None) -> None:
    ignore_supervisor_signals()
    driving = [False]

    def on_sigterm(signum: int, frame: Any) -> None:
        # The parent aborting (or a SIGTERM before the load began): just go. A SIGTERM to the whole
        # process group (timeout(1), systemd, kill -- -PGID) mid-run: stop at the next tick and report,
        # like the parent's own stop request, so the interrupted run keeps its partial result.
        if stop.value == ABORT or not driving[0]:
            os._exit(0)
        stop.value = STOP

    signal.signal(signal.SIGTERM, on_sigterm)
    unblock_signals()  # blocked by the parent across the fork (processes.start_child)
    die_with_parent()
    try:
        if cfg.cpus:  # before "ready": a driver that cannot be pinned must not drive unpinned
            try:
                os.sched_setaffinity(0, cfg.cpus)
            except OSError as exc:
                pipe.send(("error", f"cannot pin it to CPUs {','.join(map(str, cfg.cpus))}: {exc}"))
                return
        pipe.send(("ready", os.getpid()))
        if not go.wait(READY_TIMEOUT_S * 6):
            return  # the parent never said go: it is gone or gave up
        driving[0] = True
        try:
            if cfg.kept:
                from .kept import drive_kept

                pipe.send(("result", drive_kept(cfg, progress, stop, turn, schedstat, TICK_S)))
            elif cfg.loop == "io_uring":
                from .uring_loop import drive_uring

                pipe.send(("result", drive_uring(cfg, progress, stop, TICK_S)))
            else:
                pipe.send(("result", _drive(cfg, progress, stop)))
        # e.g. the epoll could not be made, or the io_uring binding raised: the parent names the driver and why. Any
        # exception: one other than OSError printed a traceback from the driver and the run said only 'driver 1 (pid
        # N) died with exit code 1 before reporting' (seen once under 'ramp --modes epoll,io-uring', cause unkept)
        except Exception as exc:
            pipe.send(("error", f"{type(exc).__name__}: {exc}"))
    except OSError:
        pass  # the parent closed its end: it is gone or gave up, nobody to report to
