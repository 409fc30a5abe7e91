"""Closed-loop load generator: a few driver processes, each a hand-written nonblocking epoll loop.

Every driver owns a share of the concurrency slots. A slot runs one request at a time, like
`benchhttp -c`: a new connection (nonblocking connect), read the worker's reply to EOF, close, and
start the next request at once. Each request's duration (connect to EOF) goes into an exact
integer-microsecond histogram, so memory is bounded by the number of distinct durations, not of
requests. Every request ends served (by the worker named in its reply) or failed (keyed by errno name).

Why processes and a raw epoll loop: one CPython process cannot open and close connections as fast as the
kernel can; a raw `select.epoll` loop does the fewest syscalls and allocations per request (no futures,
no transports), and the work is split over processes so no single one is the bottleneck. Each driver
measures how much of its wall time it spent on a CPU and how much runnable but waiting for one
(/proc/self/schedstat): above 90% on a CPU it was CPU-bound and set the pace itself; a large wait means
it shares CPUs with the workers and its own scheduling delay is part of the latencies. Results say so.

`LoadGenerator` owns its driver processes: leaving its `with` block ends them on every path (normal
end, exception, Ctrl-C, SIGTERM raised as an exception); drivers also die with their parent
(PR_SET_PDEATHSIG) in case the parent is killed outright.
"""

from __future__ import annotations

import _socket
import ctypes
import errno
import multiprocessing as mp
import os
import resource
import select
import signal
import socket
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection, wait
from types import TracebackType
from typing import Any

from .driver import parse_reply
from .errors import AcceptOrderError, PlanError
from .histogram import LatencyHistogram
from .processes import end_processes

__all__ = [
    "DEFAULT_PROCS",
    "SATURATED",
    "DriverStats",
    "LoadError",
    "LoadGenerator",
    "LoadResult",
    "check_concurrency",
    "driver_warnings",
    "open_file_limit",
    "run_load",
]

DEFAULT_PROCS = 2
SATURATED = 0.9  # a driver on a CPU more than this share of its wall time is CPU-bound (locust's threshold)
STARVED = 0.25  # a driver runnable but waiting for a CPU this share of its time competes with the workers
READY_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 3.0
TICK_S = 0.1  # how often the parent reports progress and the drivers check their timeouts
FD_MARGIN = 32  # descriptors a driver needs besides its connections (epoll, pipes, stdio, imports)
MAX_REPLY = 4096

# Failures that are not an errno of their own.
TIMEOUT = "timeout"
NO_REPLY = "no reply"  # the worker closed without a line
BAD_REPLY = "bad reply"  # it sent something that is not "worker I pid P"

_ctx = mp.get_context("fork")  # fast start; the driver needs nothing from the parent but its config


class LoadError(AcceptOrderError):
    """The load generator itself failed (a driver died or never started)."""


def open_file_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def check_concurrency(concurrency: int) -> None:
    """PlanError unless `concurrency` open connections fit under the open-file limit (ulimit -n)."""
    limit = open_file_limit()
    allowed = max(1, limit - FD_MARGIN)
    if not 1 <= concurrency <= allowed:
        raise PlanError(
            f"--concurrency must be between 1 and {allowed} (open-file limit {limit} minus {FD_MARGIN} "
            f"for the driver's own files; raise it with ulimit -n), got {concurrency}"
        )


def errno_name(code: int) -> str:
    return errno.errorcode.get(code, f"errno {code}")


def describe_error(name: str) -> str:
    """`ECONNREFUSED` -> `ECONNREFUSED (Connection refused)`; other keys unchanged."""
    code = getattr(errno, name, None)
    return f"{name} ({os.strerror(code)})" if isinstance(code, int) else name


@dataclass(frozen=True)
class DriverStats:
    """What one driver process did and how busy it was. Times in seconds."""

    index: int
    slots: int
    requests: int  # finished: served + failed
    wall_s: float
    cpu_s: float
    runqueue_s: float | None = None  # runnable but waiting for a CPU (None: no /proc/self/schedstat)

    @property
    def cpu_fraction(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def busy_fraction(self) -> float:
        """Share of wall time it was running or runnable, i.e. not waiting for the server."""
        if self.wall_s <= 0:
            return 0.0
        return (self.cpu_s + (self.runqueue_s or 0.0)) / self.wall_s

    @property
    def saturated(self) -> bool:
        """CPU-bound: it had work every time it got the CPU, so it set the pace, not the server."""
        return self.cpu_fraction > SATURATED

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DriverStats:
        return cls(**{k: data[k] for k in ("index", "slots", "requests", "wall_s", "cpu_s", "runqueue_s")})


class RequestTotals:
    """Totals derived from a histogram of served requests and a count of failed ones (shared by the
    load generator's result and the latency result built from it)."""

    histogram: LatencyHistogram
    errors: Mapping[str, int]
    wall_s: float

    @property
    def ok(self) -> int:
        return self.histogram.count

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    @property
    def requests(self) -> int:
        return self.ok + self.failed

    @property
    def throughput(self) -> float:
        """Served requests per second of load."""
        return self.ok / self.wall_s if self.wall_s > 0 else 0.0


@dataclass
class LoadResult(RequestTotals):
    """Everything the drivers measured, merged."""

    histogram: LatencyHistogram  # durations of served requests, microseconds
    errors: Counter[str]  # failed requests by errno name (or timeout / no reply / bad reply)
    served: Counter[int]  # worker index -> requests it answered
    wall_s: float  # first driver's start to last driver's end
    drivers: list[DriverStats] = field(default_factory=list)


def driver_warnings(
    drivers: list[DriverStats], workers: int, cpus: int, procs: int | None = None
) -> list[str]:
    """What to say about the load generator itself: CPU-bound (locust warns above 90% CPU), or starved
    of CPU by the workers it shares the machine with (its own delays are then in the latencies)."""
    notes = []
    for d in drivers:
        if d.saturated:
            notes.append(
                f"driver {d.index} used {100 * d.cpu_fraction:.0f}% of a CPU: the load generator may be the "
                "bottleneck and may blur the latencies; give it more --driver-procs"
            )
    waited = [d for d in drivers if d.wall_s and (d.runqueue_s or 0) / d.wall_s > STARVED]
    if waited:
        share = max((d.runqueue_s or 0) / d.wall_s for d in waited)
        notes.append(
            f"the {procs or len(drivers)} driver processes and {workers} workers share {cpus} CPUs: "
            f"drivers waited for a CPU up to {100 * share:.0f}% of the time, so client-side delay is "
            "part of these latencies"
        )
    return notes


# -- the driver process -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DriverConfig:
    index: int
    address: tuple[str, int]
    requests: int | None  # this driver's share of the requests; None: until the deadline
    duration_s: float | None
    slots: int
    timeout_s: float


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _schedstat() -> tuple[int, int] | None:
    """(ns on a CPU, ns runnable but waiting for one) of this (single-threaded) process."""
    try:
        with open("/proc/self/schedstat") as f:
            run, delay, _ = f.read().split()
        return int(run), int(delay)
    except (OSError, ValueError):
        return None


def _drive(cfg: DriverConfig, progress: Any) -> dict[str, Any]:
    """The closed loop. Returns this driver's tallies as plain data for the pipe.

    Written for speed (it must keep up with C): `_socket.socket` skips socket.socket's Python-level
    __init__ and close(); a reply that arrives with the peer's FIN (EPOLLRDHUP) is finished after one
    recv instead of a second recv that would only return EOF.
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
    inflight: dict[int, list[Any]] = {}  # fd -> [socket, start ns, reply bytes so far]
    counts: dict[int, int] = {}  # duration us -> requests (the histogram, built at the end)
    errors: Counter[str] = Counter()
    served: dict[int, int] = {}
    replies: dict[bytes, int] = {}  # reply line -> worker index: parse each worker's line once
    perf_ns = time.perf_counter_ns
    einprogress = errno.EINPROGRESS
    timeout_ns = int(cfg.timeout_s * 1e9)
    tick_ns = int(TICK_S * 1e9)
    slots = cfg.slots
    left = cfg.requests if cfg.requests is not None else -1  # requests still to start; -1: no count
    done = 0

    # The CPU window must sit inside the wall window, or a short run reads more than 100% of a CPU.
    sched0 = _schedstat()
    wall0 = time.monotonic()
    cpu0 = time.process_time()
    t0 = perf_ns()
    deadline = t0 + int(cfg.duration_s * 1e9) if cfg.duration_s is not None else None
    next_check = t0 + tick_ns
    starting = True
    try:
        while True:
            if starting and (left == 0 or (deadline is not None and perf_ns() >= deadline)):
                starting = False
            while starting and len(inflight) < slots and left != 0:
                left -= 1
                try:
                    s = new_socket(family, sock_type)
                except OSError as exc:  # EMFILE/ENFILE/ENOBUFS: count it, retry after in-flight ones end
                    errors[errno_name(exc.errno or 0)] += 1
                    done += 1
                    break
                start = perf_ns()
                code = s.connect_ex(addr)
                if code == einprogress or code == 0:
                    fd = s.fileno()
                    register(fd, flags)
                    inflight[fd] = [s, start, b""]
                else:  # refused at once, no local port left (EADDRNOTAVAIL), ...
                    s.close()
                    errors[errno_name(code)] += 1
                    done += 1
            if not starting and not inflight:
                break
            wait_s = TICK_S
            if starting and deadline is not None:
                wait_s = min(wait_s, max(0.0, (deadline - perf_ns()) / 1e9))
            for fd, ev in ep.poll(wait_s):
                entry = inflight.get(fd)
                if entry is None:
                    continue
                s = entry[0]
                error: str | None = None
                if ev & epollerr:
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
                            # With the FIN already in, that recv got everything the worker sent.
                            if not (ev & peer_closed) or len(chunk) == MAX_REPLY:
                                if len(entry[2]) > MAX_REPLY:
                                    error = BAD_REPLY
                                else:
                                    continue  # the rest of the reply, or its EOF, is still to come
                end = perf_ns()
                del inflight[fd]
                s.close()  # also takes it out of the epoll set
                done += 1
                if error is not None:
                    errors[error] += 1
                    continue
                buf = entry[2]
                who = replies.get(buf)
                if who is None:
                    parsed = parse_reply(buf)
                    if parsed is None:
                        errors[NO_REPLY if not buf else BAD_REPLY] += 1
                        continue
                    who = replies[buf] = parsed[0]
                served[who] = served.get(who, 0) + 1
                us = (end - entry[1]) // 1000
                counts[us] = counts.get(us, 0) + 1
            progress[cfg.index] = done
            now = perf_ns()
            if now >= next_check:
                next_check = now + tick_ns
                for fd, entry in [(fd, e) for fd, e in inflight.items() if now - e[1] > timeout_ns]:
                    del inflight[fd]
                    entry[0].close()
                    errors[TIMEOUT] += 1
                    done += 1
    finally:
        for entry in inflight.values():
            entry[0].close()
        ep.close()
    cpu = time.process_time() - cpu0
    wall = time.monotonic() - wall0
    sched1 = _schedstat()
    runqueue = (sched1[1] - sched0[1]) / 1e9 if sched0 and sched1 else None
    return {
        "counts": list(counts.items()),
        "errors": dict(errors),
        "served": dict(served),
        "start": wall0,
        "end": wall0 + wall,
        "stats": DriverStats(cfg.index, cfg.slots, done, round(wall, 6), round(cpu, 6), runqueue).to_dict(),
    }


def driver_main(cfg: DriverConfig, pipe: Connection, go: Any, progress: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent stops a driver only to abort the run
    _die_with_parent()
    pipe.send(("ready", os.getpid()))
    if not go.wait(READY_TIMEOUT_S * 6):
        return  # the parent never said go: it is gone or gave up
    try:
        pipe.send(("result", _drive(cfg, progress)))
    except OSError as exc:  # e.g. the epoll could not be made; the parent names the driver
        pipe.send(("error", f"{type(exc).__name__}: {exc}"))


# -- the parent side ---------------------------------------------------------------------------------


def split(total: int, parts: int) -> list[int]:
    """`total` as `parts` near-equal shares, larger ones first: split(10, 3) == [4, 3, 3]."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


class LoadGenerator:
    """Owner of the driver processes of one closed-loop run. Use as a context manager."""

    def __init__(
        self,
        address: tuple[str, int],
        *,
        requests: int | None = None,
        duration_s: float | None = None,
        concurrency: int = 200,
        procs: int = DEFAULT_PROCS,
        timeout_s: float = 10.0,
    ) -> None:
        if (requests is None) == (duration_s is None):
            raise PlanError("give a request count or a duration, not both and not neither")
        if requests is not None and requests < 1:
            raise PlanError(f"--requests must be at least 1, got {requests}")
        if duration_s is not None and not duration_s > 0:
            raise PlanError(f"--duration must be positive, got {duration_s:g} s")
        if procs < 1:
            raise PlanError(f"--driver-procs must be at least 1, got {procs}")
        check_concurrency(concurrency)
        procs = min(procs, concurrency, requests or procs)  # no driver without a slot and a request
        slots = split(concurrency, procs)
        shares: list[int | None] = list(split(requests, procs)) if requests is not None else [None] * procs
        self.configs = [
            DriverConfig(i, address, shares[i], duration_s, slots[i], timeout_s) for i in range(procs)
        ]
        self.procs: list[Any] = []
        self.pipes: list[Connection] = []
        self._go = _ctx.Event()
        self._progress: Any = _ctx.RawArray("q", procs)

    @property
    def total(self) -> int | None:
        """Requests the run will finish (None for a duration run)."""
        shares = [c.requests for c in self.configs]
        return None if None in shares else sum(s or 0 for s in shares)

    def __enter__(self) -> LoadGenerator:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        for cfg in self.configs:
            receiver, sender = _ctx.Pipe(duplex=False)
            proc = _ctx.Process(
                target=driver_main, args=(cfg, sender, self._go, self._progress), name=f"driver-{cfg.index}"
            )
            self.procs.append(proc)  # before start(): an interrupt right after it must not orphan the child
            self.pipes.append(receiver)
            proc.start()
            sender.close()
        for cfg, proc, pipe in zip(self.configs, self.procs, self.pipes, strict=True):
            ready = wait([pipe, proc.sentinel], timeout=READY_TIMEOUT_S)
            if pipe in ready:
                try:
                    if pipe.recv()[0] == "ready":
                        continue
                except EOFError:
                    pass
            raise LoadError(f"driver {cfg.index} did not start (exit code {proc.exitcode})")

    def run(self, on_tick: Callable[[int, float], None] | None = None) -> LoadResult:
        """Say go, wait for every driver's tallies, merge them. `on_tick(done, elapsed_s)` runs every
        TICK_S in this process; an exception it raises (e.g. a worker died) aborts the run."""
        started = time.monotonic()
        self._go.set()
        pending = dict(enumerate(self.pipes))
        reports: dict[int, dict[str, Any]] = {}
        while pending:
            sentinels = {self.procs[i].sentinel: i for i in pending}
            for ready in wait([*pending.values(), *sentinels], timeout=TICK_S):
                index = sentinels.get(ready) if isinstance(ready, int) else None
                if index is None:
                    index = next(i for i, p in pending.items() if p is ready)
                if index not in pending:
                    continue
                pipe = pending[index]
                if pipe.poll():
                    try:
                        kind, payload = pipe.recv()
                    except EOFError:
                        kind, payload = "eof", None
                    if kind == "result":
                        reports[index] = payload
                        del pending[index]
                        continue
                    if kind == "error":
                        raise LoadError(f"driver {index} failed: {payload}")
                self.procs[index].join(0.5)
                raise LoadError(
                    f"driver {index} (pid {self.procs[index].pid}) died with exit code "
                    f"{self.procs[index].exitcode} before reporting"
                )
            if on_tick:
                on_tick(sum(self._progress), time.monotonic() - started)
        return merge([reports[i] for i in sorted(reports)])

    def close(self) -> None:
        """End every driver still alive (SIGTERM, then SIGKILL) and reap it."""
        end_processes(self.procs, STOP_TIMEOUT_S)
        for pipe in self.pipes:
            pipe.close()
        self.pipes = []


def merge(reports: list[dict[str, Any]]) -> LoadResult:
    histogram = LatencyHistogram()
    errors: Counter[str] = Counter()
    served: Counter[int] = Counter()
    for r in reports:
        for us, n in r["counts"]:
            histogram.add(us, n)
        errors.update(r["errors"])
        served.update(r["served"])
    wall = max(r["end"] for r in reports) - min(r["start"] for r in reports) if reports else 0.0
    drivers = [DriverStats.from_dict(r["stats"]) for r in reports]
    return LoadResult(histogram, errors, served, round(wall, 6), drivers)


def run_load(
    address: tuple[str, int],
    *,
    requests: int | None = None,
    duration_s: float | None = None,
    concurrency: int = 200,
    procs: int = DEFAULT_PROCS,
    timeout_s: float = 10.0,
    on_tick: Callable[[int, float], None] | None = None,
) -> LoadResult:
    """Drive a closed-loop load at `address` until `requests` have finished or `duration_s` has passed."""
    gen = LoadGenerator(
        address,
        requests=requests,
        duration_s=duration_s,
        concurrency=concurrency,
        procs=procs,
        timeout_s=timeout_s,
    )
    with gen:
        return gen.run(on_tick)
