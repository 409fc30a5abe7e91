"""Load generator (closed loop, or open loop with a rate), the parent side: it owns a few driver processes
(loads/drive_loop.py).

Why processes and a raw epoll loop: one CPython process cannot open and close connections as fast as the
kernel can; a raw `select.epoll` loop does the fewest syscalls and allocations per connection, and the
work is split over processes so no single one is the bottleneck.

`LoadGenerator` owns its driver processes: leaving its `with` block ends them on every path (normal
end, exception, Ctrl-C, SIGTERM raised as an exception); drivers also die with their parent
(PR_SET_PDEATHSIG) in case the parent is killed outright. Interrupted, it asks the drivers to stop and
report what they measured, so a long run keeps its partial result.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from multiprocessing.connection import Connection, wait
from typing import Any

from ..core.errors import LoadError, WorkerExited
from ..core.histogram import LatencyHistogram
from ..core.hosts import HostOutcome
from ..core.load_summary import LoadSummary, ServerCloses, TimedTotals
from ..core.measures import SATURATED, DriverStats
from ..core.processes import FORK, READY_TIMEOUT_S, STOP_TIMEOUT_S, end_processes, out_of_resources, start_child
from ..core.protocol import LINE, ClientProtocol
from ..core.run_warnings import RunWarning, WarningKind, warn
from ..core.signals import deferred
from ..core.spec import ConcurrentLoad
from ..core.started import Started
from ..core.target import Attribution
from .drive_loop import ABORT, STOP, TICK_S, DriverConfig, driver_main
from .drivers import resolve
from .reply_keys import ReplyWorkers

__all__ = [
    "SATURATED",
    "DriverStats",
    "client_bound",
    "LoadGenerator",
    "LoadResult",
    "driver_warnings",
    "run_load",
]

STARVED = 0.25  # a driver runnable but waiting for a CPU this share of its time competes with the workers
REPORT_TIMEOUT_S = 5.0  # after a stop request, how long drivers have to send what they measured


@dataclass
class LoadResult(TimedTotals):
    """Everything the drivers measured, merged, as they report it (workers by the index in the reply)."""

    histogram: LatencyHistogram  # durations of served requests, microseconds
    errors: Counter[str]  # failed requests by errno name (or timeout / no reply / bad reply)
    served: Counter[int]  # worker index -> requests it answered
    wall_s: float  # first driver's start to last driver's end (over a pool: from when the pool was filled)
    drivers: list[DriverStats] = field(default_factory=list)
    interrupted: BaseException | None = None  # the Ctrl-C / SIGTERM (or WorkerExited) that stopped the run early
    # Kept connections (loads/kept.py; None for one request per connection): worker index -> connections
    # its first reply named it on, and -> connections still open when the load ended; a pool's (opened,
    # planned) connections.
    connections: Counter[int] | None = None
    held: Counter[int] | None = None
    pool: tuple[int, int] | None = None
    pool_fill_s: float | None = None  # how long the pool took to fill, before the load's time began
    by_worker: dict[int, LatencyHistogram] | None = None  # worker index -> its requests' durations
    # Kept connections the server ended first (ServerCloses): worker index -> connections it closed between
    # replies, -> replies that said Connection: close; requests sent again on a new connection.
    server_closed: Counter[int] = field(default_factory=Counter)
    told_close: Counter[int] = field(default_factory=Counter)
    resent: int = 0
    hosts: list[HostOutcome] = field(default_factory=list)  # --clients: each client host's own (loads/hosts/)
    # Attributed by reply key (loads/reply_keys.py: a server elsewhere, --target): each key the drivers
    # counted by -> the worker index every per-worker count above was placed on after the load. None: the
    # drivers counted by worker index themselves. Inverted, it gives back what the drivers counted (loads
    # from several hosts are placed together: `placed` with the inverse, add, then place the keys once).
    reply_keys: dict[int, int] | None = None

    def placed(self, indices: dict[int, int]) -> LoadResult:
        """This result with its per-worker counts, counted by reply key, moved to the worker index `indices`
        gives each key, and `reply_keys` set to it."""

        def moved(counts: Counter[int]) -> Counter[int]:
            return Counter({indices[key]: n for key, n in counts.items()})

        return dataclasses.replace(
            self,
            served=moved(self.served),
            connections=None if self.connections is None else moved(self.connections),
            held=None if self.held is None else moved(self.held),
            by_worker=None if self.by_worker is None else {indices[k]: h for k, h in self.by_worker.items()},
            server_closed=moved(self.server_closed),
            told_close=moved(self.told_close),
            reply_keys=dict(indices),
        )

    def keys(self) -> set[int]:
        """Every worker (index, or reply key before `placed`) a per-worker count names."""
        named = set(self.served) | set(self.server_closed) | set(self.told_close)
        for counts in (self.connections, self.held, self.by_worker):
            named |= set(counts or ())
        return named

    def summary(self, workers: int) -> LoadSummary:
        """As one load's summary, with a count for each of `workers` workers (and for each further one reply
        keys were placed on: more workers answered than -w said)."""
        workers = max([workers, *(i + 1 for i in (self.reply_keys or {}).values())])

        def per_worker(counts: Counter[int] | None) -> tuple[int, ...]:
            return () if counts is None else tuple(counts.get(i, 0) for i in range(workers))

        return LoadSummary(
            histogram=self.histogram,
            errors=dict(self.errors),
            served=tuple(self.served.get(i, 0) for i in range(workers)),
            wall_s=self.wall_s,
            drivers=tuple(self.drivers),
            interruption=self.interrupted,
            connections=per_worker(self.connections),
            held=per_worker(self.held),
            pool=self.pool,
            pool_fill_s=self.pool_fill_s,
            by_worker=()
            if self.by_worker is None
            else tuple(self.by_worker.get(i, LatencyHistogram()) for i in range(workers)),
            closes=ServerCloses(per_worker(self.server_closed), per_worker(self.told_close), self.resent)
            if self.server_closed or self.told_close or self.resent
            else ServerCloses(),
            hosts=tuple(
                dataclasses.replace(h, served=tuple(h.served[i] if i < len(h.served) else 0 for i in range(workers)))
                for h in self.hosts
            ),
        )


def driver_warnings(drivers: list[DriverStats], workers: int, cpus: int, procs: int | None = None) -> list[RunWarning]:
    """What to say about the load generator itself: CPU-bound (locust warns above 90% CPU), or starved
    of CPU by the workers it shares the machine with (its own delays are then in the latencies)."""
    notes = [
        warn(WarningKind.DRIVER_SATURATED, driver=d.index, percent=100 * d.cpu_fraction) for d in drivers if d.saturated
    ]
    waited = [d for d in drivers if d.wall_s and (d.runqueue_s or 0) / d.wall_s > STARVED]
    if waited:
        share = max((d.runqueue_s or 0) / d.wall_s for d in waited)
        notes.append(
            warn(
                WarningKind.DRIVERS_STARVED,
                procs=procs or len(drivers),
                workers=workers,
                cpus=cpus,
                percent=100 * share,
            )
        )
    return notes


def client_bound(drivers: list[DriverStats], worker_cpu_s: float | None, wall_s: float, cpus: int) -> RunWarning | None:
    """A warning when the client, not the server, set the pace: a driver on a CPU nearly all the time while
    the workers together used less than SATURATED of the `cpus` CPUs they may run on (they idled, waiting
    for connections). None when it was not so, or the workers' CPU is not known (`worker_cpu_s` None)."""
    if worker_cpu_s is None or wall_s <= 0 or cpus < 1 or not drivers:
        return None
    client = max(d.cpu_fraction for d in drivers)
    workers = worker_cpu_s / wall_s / cpus
    if client <= SATURATED or workers >= SATURATED:
        return None
    return warn(WarningKind.CLIENT_BOUND, client=100 * client, workers=100 * min(workers, 1.0), cpus=cpus)


def split(total: int, parts: int) -> list[int]:
    """`total` as `parts` near-equal shares, larger ones first: split(10, 3) == [4, 3, 3]."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def in_proportion(total: int, weights: list[int]) -> list[int]:
    """`total` shared in proportion to `weights`, whole numbers that add up to it (largest remainders first):
    in_proportion(10, [3, 2]) == [6, 4], in_proportion(7, [2, 1]) == [5, 2]."""
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    shares = [int(x) for x in exact]
    for i in sorted(range(len(weights)), key=lambda i: shares[i] - exact[i])[: total - sum(shares)]:
        shares[i] += 1
    return shares


class LoadGenerator(Started):
    """Owner of the driver processes of one run (closed loop, or open loop with a rate). Use as a context manager."""

    def __init__(
        self, address: tuple[str, int], attribution: Attribution, load: ConcurrentLoad, protocol: ClientProtocol = LINE
    ) -> None:
        load = load.validated()
        loop = resolve(load.driver, load.keeps_connections)  # before any process starts: io_uring refused here
        procs = load.driver_procs
        slots = split(load.concurrency, procs)
        count = load.connections
        shares: list[int | None] = [None] * procs
        if count is not None:
            # An open loop's rate is shared by slots: each driver's connections in the same proportion, so
            # that every driver ends when the others do and the rate offered holds to the end.
            shares = list(split(count, procs) if load.rate is None else in_proportion(count, slots))
        self.attribution = attribution
        self.configs = [
            DriverConfig(
                i,
                address,
                attribution,
                protocol,
                shares[i],
                load.duration_s,
                slots[i],
                load.timeout_s,
                None if load.rate is None else load.rate * slots[i] / load.concurrency,
                load.cpus,
                load.requests_per_connection,
                load.pool,
                procs,
                loop,
                offset_s=0.0 if load.rate is None else i / load.rate,  # schedules interleave, as hosts' stripes
            )
            for i in range(procs)
        ]
        self.procs: list[Any] = []
        self.pipes: list[Connection] = []
        self._go = FORK.Event()
        self._stop: Any = FORK.RawValue("b", 0)
        self._progress: Any = FORK.RawArray("q", 2 * procs)  # per driver: finished, served
        self._turn: Any = FORK.RawValue("i", 0)  # a pool's fill: the driver whose turn it is to open its share

    @property
    def total(self) -> int | None:
        """Connections the run will finish (None for a duration run)."""
        shares = [c.requests for c in self.configs]
        return None if None in shares else sum(s or 0 for s in shares)

    def finished(self) -> tuple[int, int]:
        """(connections finished, of which served) so far, as the drivers last published them."""
        return sum(self._progress[0::2]), sum(self._progress[1::2])

    def start(self) -> None:
        for cfg in self.configs:
            receiver, sender = out_of_resources(f"driver {cfg.index}", lambda: FORK.Pipe(duplex=False))
            proc = FORK.Process(
                target=driver_main,
                args=(cfg, sender, self._go, self._progress, self._stop, self._turn),
                name=f"driver-{cfg.index}",
            )
            self.procs.append(proc)  # before start(): an interrupt right after it must not orphan the child
            self.pipes.append(receiver)
            out_of_resources(f"driver {cfg.index}", partial(start_child, proc))
            sender.close()
        for cfg, proc, pipe in zip(self.configs, self.procs, self.pipes, strict=True):
            ready = wait([pipe, proc.sentinel], timeout=2 * READY_TIMEOUT_S)
            if pipe in ready:
                try:
                    kind, payload = pipe.recv()
                    if kind == "ready":
                        continue
                    if kind == "error":
                        raise LoadError(f"driver {cfg.index} did not start: {payload}")
                except EOFError:
                    pass
            raise LoadError(f"driver {cfg.index} did not start (exit code {proc.exitcode})")

    def run(self, on_tick: Callable[[int, float], None] | None = None) -> LoadResult:
        """Say go, wait for every driver's tallies, merge them. `on_tick(done, elapsed_s)` runs every
        TICK_S in this process; an exception it raises (e.g. a worker died) aborts the run.

        Ctrl-C or SIGTERM (a KeyboardInterrupt) does not lose the run: the drivers are told to stop, their
        partial tallies are merged, and the result comes back with `interrupted` set to the exception,
        for the caller to re-raise once the result is saved. So does a WorkerExited from `on_tick` (a
        worker of a server this tool did not start exited: what was measured until then stands)."""
        started = time.monotonic()
        self._go.set()
        reports: dict[int, dict[str, Any]] = {}
        try:
            self._collect(reports, started, on_tick, deadline=None)
        except (KeyboardInterrupt, WorkerExited) as exc:  # a signal, or a worker of an attached server left
            self._stop.value = STOP
            # A second Ctrl-C or SIGTERM while the drivers report must not cut this short; the first
            # signal decides how the command ends (deferred() drops the second inside this handler).
            with deferred():
                self._collect(reports, started, None, deadline=time.monotonic() + REPORT_TIMEOUT_S)
            result = self._placed(merge([reports[i] for i in sorted(reports)]))
            result.interrupted = exc
            return result
        return self._placed(merge([reports[i] for i in sorted(reports)]))

    def _placed(self, result: LoadResult) -> LoadResult:
        """Counted by reply key (a server known by its replies only): placed on worker indices, once, here."""
        if not isinstance(self.attribution, ReplyWorkers):
            return result
        return result.placed(self.attribution.place(result.keys()))

    def _collect(
        self,
        reports: dict[int, dict[str, Any]],
        started: float,
        on_tick: Callable[[int, float], None] | None,
        deadline: float | None,
    ) -> None:
        pending = {i: p for i, p in enumerate(self.pipes) if i not in reports}
        while pending:
            if deadline is not None and time.monotonic() > deadline:
                return  # drivers that did not report in time: their connections are missing, said below
            sentinels = {self.procs[i].sentinel: i for i in pending}
            for ready in wait([*pending.values(), *sentinels], timeout=TICK_S):
                index = sentinels.get(ready) if isinstance(ready, int) else None
                if index is None:
                    index = next(i for i, p in pending.items() if p is ready)
                if index not in pending:
                    continue
                pipe = pending[index]
                if pipe.poll():
                    # A report read off the pipe is gone from it: a signal between the read and the store
                    # would lose what the driver sent (and the stop's collect would take the driver, which
                    # exited, for dead). Signals are held across both; one that came is raised once it is stored.
                    with deferred():
                        try:
                            kind, payload = pipe.recv()
                        except EOFError:
                            kind, payload = "eof", None
                        if kind == "result":
                            reports[index] = payload
                            del pending[index]
                    if kind == "result":
                        continue
                    if kind == "error":
                        raise LoadError(f"driver {index} failed: {payload}")
                self.procs[index].join(0.5)
                raise LoadError(
                    f"driver {index} (pid {self.procs[index].pid}) died with exit code "
                    f"{self.procs[index].exitcode} before reporting"
                )
            if on_tick:
                on_tick(self.finished()[0], time.monotonic() - started)

    def close(self) -> None:
        """End every driver still alive (SIGTERM, then SIGKILL) and reap it."""
        self._stop.value = ABORT  # a driver's SIGTERM handler then exits at once instead of reporting
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
    errors = +errors  # a driver stopped with nothing in flight reports 'aborted: 0': no failure to list
    # a driver stopped while its pool filled ran no load: none of its time is the load's
    ran = [r for r in reports if r.get("ran", True)]
    first = min((r["start"] for r in ran), default=0.0)  # CLOCK_MONOTONIC: the host's, every driver's alike
    wall = max(r["end"] for r in ran) - first if ran else 0.0
    earliest = min((r["start"] for r in reports), default=0.0)  # of all: one that ran no load may start first
    drivers = [replace(DriverStats.from_dict(r["stats"]), started_s=round(r["start"] - earliest, 6)) for r in reports]
    result = LoadResult(histogram, errors, served, round(wall, 6), drivers)
    kept = [r for r in reports if "connections" in r]
    if kept:  # loads/kept.py's reports: connections per worker, held at the end, a pool's size
        result.connections, result.held, result.by_worker = Counter(), Counter(), {}
        for r in kept:
            result.connections.update(r["connections"])
            result.held.update(r["held"])
            result.server_closed.update(r.get("server_closed", {}))
            result.told_close.update(r.get("told_close", {}))
            result.resent += r.get("resent", 0)
            for who, counts in r["worker_counts"].items():
                for us, n in counts:
                    result.by_worker.setdefault(who, LatencyHistogram()).add(us, n)
        pools = [r["pool"] for r in kept if "pool" in r]
        if pools:
            result.pool = (sum(p["opened"] for p in pools), sum(p["planned"] for p in pools))
            # the drivers fill the pool in turns from the same go: the last to see it filled ends the fill
            result.pool_fill_s = max(p["fill_s"] for p in pools)
    return result


def run_load(
    address: tuple[str, int],
    attribution: Attribution,
    load: ConcurrentLoad,
    on_tick: Callable[[int, float], None] | None = None,
    protocol: ClientProtocol = LINE,
) -> LoadResult:
    """Drive a load at `address` until its connections have finished or its duration passed."""
    with LoadGenerator(address, attribution, load, protocol) as gen:
        return gen.run(on_tick)
