"""The result of a closed-loop latency run: the exact duration histogram, failures, per worker and driver."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ...analysis.model_check import ModelCheck
from ...core.errors import ResultFileError
from ...core.first_requests import FirstRequests
from ...core.histogram import LatencyHistogram
from ...core.hosts import HostOutcome
from ...core.load_summary import (
    LoadSummary,
    ServerCloses,
    TimedTotals,
    cpu_us_per_connection,
    kept_fields,
    pool_fill_of,
    pool_of,
)
from ...core.measures import DriverStats, Environment, WorkerCounters
from ...core.spec import ConcurrentLoad, ServerSpec
from ...results.evidence_shapes import EVIDENCE
from ...results.firsts_shape import firsts_within
from ...results.host_shapes import hosts_add_up, hosts_fit_workers
from ...results.merge_titles import DEFAULT_TITLE_OPENING
from ...results.schema import Anything, Integer, ListOf, Number, Record, SchemaError, Text, child, derive
from ...results.shapes import (
    ERRORS,
    POOL,
    PORT,
    SKIPPED,
    STOPPED,
    at_most_workers,
    histogram_total,
)
from ...results.typed import build, hosts_of, runs_list, skipped_map
from ...results.watched_shape import LISTENERS_WATCHED
from .model_shape import MODEL_SHAPE

PERCENTILES = (50.0, 90.0, 99.0, 99.9)


def default_title(server: ServerSpec, sweep: bool = False, load: ConcurrentLoad | None = None) -> str:
    """The histogram's title when --title gives none (stored in the result); an open loop says its rate."""
    rate = f", open loop at {load.rate:g}/s" if load is not None and load.rate is not None else ""
    if sweep:
        batch = server.accept_batch
        return f"{DEFAULT_TITLE_OPENING}{server.label}, accept-batch {batch if batch else 'no limit'}{rate})"
    return f"{DEFAULT_TITLE_OPENING}{server.label}{rate})"


@dataclass(frozen=True)
class LatencyResult(TimedTotals):
    """One latency run: plan, where, the exact duration histogram, failures, per-worker and per-driver."""

    server: ServerSpec
    load: ConcurrentLoad
    environment: Environment
    port: int
    histogram: LatencyHistogram  # served requests' durations, integer microseconds
    errors: dict[str, int]  # failed requests by errno name (or timeout / no reply / bad reply)
    served: tuple[int, ...]  # requests answered per worker index
    counters: tuple[WorkerCounters, ...]
    drivers: tuple[DriverStats, ...]
    wall_s: float  # of the load, first request to last (over a pool: from when it was filled)
    title: str = ""
    work_estimate_us: float | None = None  # the handler's busy loop, timed in this process before the run
    evidence: dict[str, Any] = field(default_factory=dict)  # kernel evidence, from the session
    interrupted: bool = False  # Ctrl-C or SIGTERM ended the load early: the figures are what it got to
    model: ModelCheck | None = None  # what queueing alone predicts for this run (None: files before 0.3)
    # Kept connections (load.requests_per_connection != 1 or a pool; empty otherwise, and in older files):
    # per worker, the connections it accepted (as their first replies say), those it held when the load
    # ended, and its requests' durations; `served` then counts requests. A pool's (opened, planned) size.
    # The most each worker held at once is its own count (counters' held_peak).
    connections: tuple[int, ...] = ()
    held_at_end: tuple[int, ...] = ()
    worker_histograms: tuple[LatencyHistogram, ...] = ()
    # Of the histogram's requests, the connections' first ones, all and per worker (they also waited for the
    # connect and to be accepted): None in files from before they were kept apart, where it is not known
    first_requests: FirstRequests | None = None
    pool: tuple[int, int] | None = None
    # The seconds the pool took to fill, before `wall_s` began (saved in `pool`; None: no pool, or a file
    # from before it was timed apart, whose wall_s holds its fill)
    pool_fill_s: float | None = None
    # Kept connections the server ended before the client did, per worker (saved only where it ended some;
    # files before it and runs where it ended none: none).
    server_closes: ServerCloses = ServerCloses()
    # --clients: what each client host drove (its share of every figure above, which adds theirs up), its
    # clock and its timing; empty for a load driven from this host, and in older files.
    hosts: tuple[HostOutcome, ...] = ()

    @classmethod
    def of(cls, load_summary: LoadSummary, **rest: Any) -> LatencyResult:
        """A latency result from its load's summary and the rest (server, load, environment, ...)."""
        rest.setdefault("interrupted", load_summary.interrupted)
        return cls(
            histogram=load_summary.histogram,
            errors=dict(load_summary.errors),
            served=load_summary.served,
            drivers=load_summary.drivers,
            wall_s=load_summary.wall_s,
            connections=load_summary.connections,
            held_at_end=load_summary.held,
            worker_histograms=load_summary.by_worker,
            first_requests=load_summary.firsts,
            pool=load_summary.pool,
            pool_fill_s=load_summary.pool_fill_s,
            server_closes=load_summary.closes,
            hosts=load_summary.hosts,
            **rest,
        )

    @property
    def client_cpu_us(self) -> float | None:
        """The load generator's own CPU per connection, in µs (None: no driver figures)."""
        return cpu_us_per_connection(self.drivers)

    @property
    def worker_cpu_s(self) -> float | None:
        """The workers' CPU over the run, all together (None: a worker's is not known)."""
        times = [c.cpu_s for c in self.counters]
        return sum(t for t in times if t is not None) if times and None not in times else None

    @property
    def others_cpu_share(self) -> tuple[float, float] | None:
        """(share of all CPUs busy host-wide, share other processes used) over the run: the host's busy
        ticks less the run's own workers' and load generator's CPU, the load generator's only where it ran on
        this machine's CPUs: here, or on client hosts (--clients) whose kernel is this one (shared_hosts).
        None when the host's ticks are not known or too few to say (environment.host_busy), when the workers'
        CPU is not known (host_busy_unsplit says the busy share alone), or when this host only coordinated a
        load from client hosts at a server elsewhere: then none of its CPUs were the run's."""
        host = self._host_busy()
        if host is None or self.worker_cpu_s is None:
            return None
        busy, cpu_seconds = host
        own_s = self.worker_cpu_s + self._generator_cpu_s()
        return busy, max(0.0, busy - own_s / cpu_seconds)

    def _generator_cpu_s(self) -> float:
        """The load generator's CPU on this machine's CPUs: its drivers here, or those of shared_hosts."""
        drivers = [d for h in self.shared_hosts for d in h.drivers] if self.hosts else list(self.drivers)
        return sum(d.cpu_s for d in drivers)

    @property
    def host_busy_unsplit(self) -> tuple[float, float] | None:
        """(share of all CPUs busy host-wide, the load generator's share of them) where the rest cannot be told
        apart: the workers' CPU was not read (a server of the remote kind: here, whose processes are not ours,
        or on another machine: which this host cannot tell). None otherwise."""
        host = self._host_busy()
        if host is None or self.worker_cpu_s is not None:
            return None
        busy, cpu_seconds = host
        return busy, min(busy, self._generator_cpu_s() / cpu_seconds)

    @property
    def shared_hosts(self) -> tuple[HostOutcome, ...]:
        """The client hosts (--clients) that ran on this machine's kernel, so on its CPUs: localhost, a network
        namespace, a container (their boot_id is the coordinator's). None in files from before boot_id."""
        machine = self.evidence.get("machine")
        ours = machine.get("after", {}).get("boot_id") if isinstance(machine, dict) else None
        return tuple(h for h in self.hosts if ours and h.boot_id == ours)

    def _host_busy(self) -> tuple[float, float] | None:
        """(busy share, CPU-seconds) of this machine over the run, where its CPUs ran any of it."""
        from ...core.environment import host_busy
        from ...servers.registry import known_by_replies

        host = host_busy(self.evidence.get("machine"))
        if host is None or host[1] <= 0:
            return None
        if self.evidence.get("traffic_elsewhere"):
            return None
        if self.hosts and known_by_replies(self.server) and not self.shared_hosts:
            return None  # a file from before traffic_elsewhere: the server elsewhere, as its clients were
        return host

    @property
    def worker_cpus(self) -> int:
        """How many CPUs the workers could use at once: their number, capped by their pinning or the machine."""
        return min(self.server.workers, len(set(self.server.cpus)) or self.environment.cpu_count)

    @property
    def late(self) -> int:
        """Open loop: connections due while all -c in flight were busy, so started late (0: a closed loop)."""
        return sum(d.late or 0 for d in self.drivers)

    @property
    def unstarted(self) -> int:
        """An open loop with --duration: connections due within it that never started (a driver may stop one
        short at the deadline, so up to one per driver is not counted). 0 otherwise, or when interrupted."""
        load = self.load
        if load.rate is None or load.duration_s is None or self.interrupted:
            return 0
        missing = round(load.rate * load.duration_s) - self.driven
        return missing if missing > len(self.drivers) else 0

    def percentile_ms(self, q: float) -> float | None:
        return self.histogram.percentile(q) / 1000 if self.ok else None

    def summary(self) -> dict[str, float | int | None]:
        """The figures the reports show, in milliseconds (None when nothing was served)."""
        h = self.histogram
        if not h.count:
            return {"count": 0}
        return {
            "count": h.count,
            "min_ms": (h.min_us or 0) / 1000,
            "avg_ms": h.mean_us / 1000,
            "med_ms": h.median_us() / 1000,
            **{f"p{q:g}_ms": h.percentile(q) / 1000 for q in PERCENTILES},
            "max_ms": (h.max_us or 0) / 1000,
            "dev_ms": h.stdev_us / 1000,
            "throughput": self.throughput,
            **({} if (cpu := self.client_cpu_us) is None else {"client_cpu_us": cpu}),
        }

    def to_dict(self) -> dict[str, Any]:
        return (
            {
                "server": self.server.to_dict(),
                "load": self.load.to_dict(),
                "environment": asdict(self.environment),
                "port": self.port,
                "wall_s": self.wall_s,
                "title": self.title,
                "summary": self.summary(),  # derived, for other tools; ignored when read back
                "histogram": self.histogram.to_dict(),
                "errors": dict(self.errors),
                "served": list(self.served),
                "counters": [c.to_dict() for c in self.counters],
                "drivers": [d.to_dict() for d in self.drivers],
                "work_estimate_us": self.work_estimate_us,
                "evidence": self.evidence,
                "interrupted": self.interrupted,
            }
            | ({"model": self.model.to_dict()} if self.model is not None else {})
            | self.kept_dict()
            | ({"hosts": [h.to_dict() for h in self.hosts]} if self.hosts else {})
        )

    def kept_dict(self) -> dict[str, Any]:
        """The kept connections' figures ({} for one request per connection: those files stay as they were)."""
        return kept_fields(
            self.connections,
            self.held_at_end,
            self.pool,
            self.worker_histograms,
            self.server_closes,
            self.pool_fill_s,
            self.first_requests,
        )

    @property
    def held_peak(self) -> tuple[int | None, ...]:
        """The most connections each worker held at once, as it counted them (None: it did not say)."""
        return tuple(c.held_peak for c in self.counters)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LatencyResult:
        server = build(ServerSpec, data["server"])
        served = data.get("served", ())
        if (
            not isinstance(served, list | tuple)
            or len(served) > server.workers
            or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1 << 63 for n in served)
        ):
            raise ResultFileError("malformed result: 'served' is not a count per worker")
        return cls(
            server=server,
            load=build(ConcurrentLoad, data["load"]).as_ran(),  # an older file's -c as given: what ran
            environment=build(Environment, data["environment"]),
            port=data["port"],
            histogram=LatencyHistogram.from_dict(data["histogram"]),
            errors=dict(data.get("errors", {})),
            served=tuple(served),
            counters=tuple(build(WorkerCounters, c) for c in data.get("counters", ())),
            drivers=tuple(build(DriverStats, d) for d in data.get("drivers", ())),
            wall_s=data.get("wall_s", 0.0),
            title=data.get("title", ""),
            work_estimate_us=data.get("work_estimate_us"),
            evidence=data.get("evidence", {}),
            interrupted=bool(data.get("interrupted", False)),
            model=build(ModelCheck, data["model"]) if data.get("model") is not None else None,
            connections=tuple(data.get("connections", ())),
            held_at_end=tuple(data.get("held_at_end", ())),
            worker_histograms=tuple(LatencyHistogram.from_dict(h) for h in data.get("worker_histograms", ())),
            first_requests=FirstRequests.from_dict(data.get("first_requests")),
            pool=pool_of(data),
            pool_fill_s=pool_fill_of(data),
            server_closes=ServerCloses.from_dict(data.get("server_closes")),
            hosts=hosts_of(data),
        )

    @property
    def mode(self) -> str:
        return self.server.mode


@dataclass(frozen=True)
class LatencyCompareResult:
    """`latency --modes`: one latency run per mode (or server), the skipped ones, and the tails' verdict."""

    runs: tuple[LatencyResult, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """What was measured; the verdicts derived from it are added when it is saved (its experiment's
        `derived`, experiments/latency/experiment.py)."""
        doc: dict[str, Any] = {"runs": [r.to_dict() for r in self.runs], "skipped": self.skipped}
        return doc | ({"interrupted": True} if self.interrupted else {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LatencyCompareResult:
        runs = tuple(LatencyResult.from_dict(r) for r in runs_list(data))
        return cls(runs, skipped_map(data), bool(data.get("interrupted", False)))


@dataclass(frozen=True)
class SweepResult:
    """`sweep`: one latency run per cap on the connections accepted per wakeup."""

    runs: tuple[LatencyResult, ...]
    interrupted: bool = False
    # An error ended the sweep after some caps (a client host lost, a driver that could not start): why. The
    # runs are the caps measured before it.
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"runs": [r.to_dict() for r in self.runs]}
        return (
            doc
            | ({"interrupted": True} if self.interrupted else {})
            | ({"stopped": self.stopped} if self.stopped else {})
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepResult:
        runs = tuple(LatencyResult.from_dict(r) for r in runs_list(data))
        return cls(runs, bool(data.get("interrupted", False)), data.get("stopped"))


# `summary` is derived (written for other tools, ignored when read back), but must agree with the histogram.
_SUMMARY = Record(
    {
        "count": Integer(),
        **{name: Number() for name in ("min_ms", "avg_ms", "med_ms", "max_ms", "dev_ms", "throughput")},
        "client_cpu_us": Number(),  # the load generator's CPU per connection (0.4 files lack it)
        **{f"p{q:g}_ms": Number() for q in PERCENTILES},
    }
)


def _summary_adds_up(run: Mapping[str, Any], at: str) -> None:
    count = run.get("summary", {}).get("count")
    if count is not None and count != histogram_total(run["histogram"]):
        raise SchemaError(
            child(child(at, "summary"), "count"),
            f"is {count}, but the histogram holds {histogram_total(run['histogram'])} samples",
        )


LATENCY_SHAPE = derive(
    LatencyResult,
    model=MODEL_SHAPE,
    port=PORT,
    errors=ERRORS,
    evidence=EVIDENCE.but(listeners_watched=LISTENERS_WATCHED),  # an attached server's, its model's queue
    summary=_SUMMARY,
    pool=POOL,
    omit=("pool_fill_s",),  # saved in `pool`
    optional=("errors", "served", "counters", "drivers", "wall_s"),
    rules=(
        at_most_workers("served"),
        at_most_workers("connections", exactly=True),  # kept connections: every worker's count, as the load placed them
        at_most_workers("held_at_end", exactly=True),
        at_most_workers("worker_histograms", exactly=True),
        firsts_within,
        _summary_adds_up,
        hosts_fit_workers,
        hosts_add_up,
    ),
)
LATENCY_COMPARE_SHAPE = derive(
    LatencyCompareResult, runs=ListOf(LATENCY_SHAPE), skipped=SKIPPED, verdict=Anything(), model_verdict=Text()
)
SWEEP_SHAPE = derive(SweepResult, runs=ListOf(LATENCY_SHAPE), stopped=STOPPED)
