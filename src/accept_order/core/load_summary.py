"""What one load got, as one type: served per worker, failed by errno, durations, the drivers.

`LoadSummary` is what `session.drive_load` returns for every experiment that drives a load (latency,
sweep, burst, ramp, reload), and what `merge` adds (`extend`, as locust's StatsEntry does): histograms,
failures, per-worker counts add; the drivers are all kept; wall time adds for loads run one after
another and takes the longest for loads run at the same moment. `LoadTotals` (timed or counted) holds the
totals every result of a load derives the same way, so no result counts "failed" or "driven" on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.histogram import LatencyHistogram
from .driver_stats import DriverStats
from .first_requests import FirstRequests, added
from .host_outcome import HostOutcome, extended
from .totals import (
    CountedTotals,
    LoadTotals,
    TimedTotals,
    add_counts,
    add_errors,
    add_histograms,
    add_walls,
    cpu_us_per_connection,
)

__all__ = [
    "CountedTotals",
    "LoadTotals",
    "TimedTotals",
    "add_counts",
    "cpu_us_per_connection",
    "LoadSummary",
    "ServerCloses",
]


@dataclass(frozen=True)
class ServerCloses:
    """How a server ended kept connections before the client did (loads/kept.py), per worker index: `closed`,
    the connections it closed between two replies (EOF or a reset, no byte of a reply under way: idle, or
    with the next request just sent), counted for the worker that held them; `told`, the replies that said
    `Connection: close` before the connection's last request (served; the client then opened another).
    `resent`: requests sent again on a new connection because the server closed theirs before answering
    (once each, as an HTTP client retries an idempotent request; a second failure is a failure).
    `unnamed_closed`, `unnamed_told`: the same on connections counted for no worker (an attached server's opened in
    place of the pool's, whose holders the client did not look for; a --target's whose replies named none): an
    attached nginx with keepalive_requests 100 told 728 connections to close (its access log's 100th requests) and
    the report read 8, the pool's own."""

    closed: tuple[int, ...] = ()
    told: tuple[int, ...] = ()
    resent: int = 0
    unnamed_closed: int = 0
    unnamed_told: int = 0

    def __bool__(self) -> bool:
        return any(self.closed) or any(self.told) or self.resent > 0 or self.unnamed_closed + self.unnamed_told > 0

    @property
    def all_closed(self) -> int:
        return sum(self.closed) + self.unnamed_closed

    @property
    def all_told(self) -> int:
        return sum(self.told) + self.unnamed_told

    def extend(self, other: ServerCloses) -> ServerCloses:
        return ServerCloses(
            add_counts(self.closed, other.closed),
            add_counts(self.told, other.told),
            self.resent + other.resent,
            self.unnamed_closed + other.unnamed_closed,
            self.unnamed_told + other.unnamed_told,
        )

    def to_dict(self) -> dict[str, Any]:
        unnamed = {"unnamed_closed": self.unnamed_closed, "unnamed_told": self.unnamed_told}
        # written only where some were: files of every other run read as before
        return {
            "closed": list(self.closed),
            "told": list(self.told),
            "resent": self.resent,
            **{k: n for k, n in unnamed.items() if n},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ServerCloses:
        """From a file's `server_closes` (absent in older files and where the server closed none: none)."""
        if not isinstance(data, Mapping):
            return cls()
        return cls(
            tuple(int(n) for n in data.get("closed", ())),
            tuple(int(n) for n in data.get("told", ())),
            int(data.get("resent", 0)),
            int(data.get("unnamed_closed", 0)),
            int(data.get("unnamed_told", 0)),
        )


@dataclass(frozen=True)
class LoadSummary(TimedTotals):
    """One load's outcome. `served` is per worker from the replies (or, for a server whose replies do not
    name the worker, the kernel's accept counts); `histogram` holds every served connection's duration."""

    histogram: LatencyHistogram
    errors: Mapping[str, int]
    served: tuple[int, ...]
    wall_s: float  # first driver's start to last driver's end
    drivers: tuple[DriverStats, ...] = ()
    # The Ctrl-C or SIGTERM that stopped the load early (or a WorkerExited: a worker of an attached server
    # left): the caller keeps the partial result, then raises it.
    interruption: BaseException | None = field(default=None, compare=False)
    # Kept connections (several requests each, or a pool; empty otherwise, where each connection is one of
    # `served`): per worker, the connections whose first reply named it (it accepted them), and those it
    # still held when the load ended. `served` then counts requests. A pool's (opened, planned) connections,
    # and the seconds its fill took before the load's time (`wall_s`) began (None: no pool, or an older file).
    connections: tuple[int, ...] = ()
    held: tuple[int, ...] = ()
    pool: tuple[int, int] | None = None
    pool_fill_s: float | None = None
    by_worker: tuple[LatencyHistogram, ...] = ()  # kept connections: each worker's requests' durations
    # ... and of the histogram's, the connections' first requests' (they also waited to be accepted), all and per
    # worker. None: not kept apart (an older file), or one request per connection.
    firsts: FirstRequests | None = None
    closes: ServerCloses = ServerCloses()  # kept connections the server ended before the client did
    hosts: tuple[HostOutcome, ...] = ()  # --clients: what each client host drove (the fields above: all of them)
    # --observe-on: what observe saw on the server's host during the load, per worker beside the load's counts
    # (plain data: experiments/observe/remote.py `joined`), one per load this summary adds up
    observed: tuple[Mapping[str, Any], ...] = ()
    # A server elsewhere (--target) whose replies named no worker (a stock page; loads/reply_keys.py): what it served
    # so, in the histogram and on no row of `served`. Not in a latency file, whose histogram keeps it (its count less
    # the rows'); a burst's and a ramp's keep it (BurstCell, RampStep), which keep no histogram.
    unnamed: int = 0

    @property
    def interrupted(self) -> bool:
        return self.interruption is not None

    def percentile_us(self, q: float) -> int | None:
        """The q-th percentile of the served connections' durations, None when none was served."""
        return self.histogram.percentile(q) if self.histogram.count else None

    @property
    def max_us(self) -> int | None:
        return self.histogram.max_us

    @property
    def client_cpu_us(self) -> float | None:
        """The load generator's CPU per connection, in µs (cpu_us_per_connection)."""
        return cpu_us_per_connection(self.drivers)

    def extend(self, other: LoadSummary, concurrent: bool = False) -> LoadSummary:
        """This load and `other` as one: run one after the other, or at the same moment (`concurrent`)."""
        return LoadSummary(
            histogram=add_histograms(self.histogram, other.histogram),
            errors=add_errors(self.errors, other.errors),
            served=add_counts(self.served, other.served),
            wall_s=add_walls(self.wall_s, other.wall_s, concurrent),
            drivers=self.drivers + other.drivers,
            interruption=self.interruption or other.interruption,
            connections=add_counts(self.connections, other.connections),
            # held when the load ended: at once, both loads' connections; one after the other, the later's
            held=add_counts(self.held, other.held) if concurrent else other.held or self.held,
            by_worker=_add_worker_histograms(self.by_worker, other.by_worker),
            firsts=added(self.firsts, bool(self.connections), other.firsts, bool(other.connections)),
            pool=None
            if self.pool is None and other.pool is None
            else tuple(a + b for a, b in zip(self.pool or (0, 0), other.pool or (0, 0), strict=True)),  # type: ignore[arg-type]
            # filled at once, the longer fill; one after the other, both (as the wall times)
            pool_fill_s=_fills(self.pool_fill_s, other.pool_fill_s, concurrent),
            closes=self.closes.extend(other.closes),
            hosts=_hosts_extended(self.hosts, other.hosts, concurrent),
            observed=self.observed + other.observed,
            unnamed=self.unnamed + other.unnamed,
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields as a latency run stores them."""
        return (
            {
                "wall_s": self.wall_s,
                "histogram": self.histogram.to_dict(),
                "errors": dict(self.errors),
                "served": list(self.served),
                "drivers": [d.to_dict() for d in self.drivers],
            }
            | self.kept_dict()
            | ({"hosts": [h.to_dict() for h in self.hosts]} if self.hosts else {})
        )

    def kept_dict(self) -> dict[str, Any]:
        """The kept connections' figures as a run stores them ({} for one request per connection)."""
        return kept_fields(
            self.connections, self.held, self.pool, self.by_worker, self.closes, self.pool_fill_s, self.firsts
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoadSummary:
        """From a latency run's document (checked on load: results/typed.py)."""
        return cls(
            histogram=LatencyHistogram.from_dict(data["histogram"]),
            errors={str(k): int(v) for k, v in data.get("errors", {}).items()},
            served=tuple(int(n) for n in data.get("served", ())),
            wall_s=float(data.get("wall_s", 0.0)),
            drivers=tuple(DriverStats.from_dict(d) for d in data.get("drivers", ())),
            connections=tuple(int(n) for n in data.get("connections", ())),
            held=tuple(int(n) for n in data.get("held_at_end", ())),
            pool=pool_of(data),
            pool_fill_s=pool_fill_of(data),
            by_worker=tuple(LatencyHistogram.from_dict(h) for h in data.get("worker_histograms", ())),
            firsts=FirstRequests.from_dict(data.get("first_requests")),
            closes=ServerCloses.from_dict(data.get("server_closes")),
            hosts=_hosts_of(data),
        )


def _hosts_of(data: Mapping[str, Any]) -> tuple[HostOutcome, ...]:
    return tuple(HostOutcome.from_dict(h) for h in data.get("hosts", ()))


def _hosts_extended(
    a: tuple[HostOutcome, ...], b: tuple[HostOutcome, ...], concurrent: bool
) -> tuple[HostOutcome, ...]:
    """Two loads' hosts as one load's: a host in both has its figures added (run_load's rule for the rest)."""
    return extended(a, b, concurrent)


def _fills(a: float | None, b: float | None, concurrent: bool) -> float | None:
    """Two pools' fill times as one: filled at the same moment, the longer; one after the other, both."""
    if a is None and b is None:
        return None
    return add_walls(a or 0.0, b or 0.0, concurrent)


def _add_worker_histograms(
    a: tuple[LatencyHistogram, ...], b: tuple[LatencyHistogram, ...]
) -> tuple[LatencyHistogram, ...]:
    """Per-worker histograms added worker by worker (the shorter list adds nothing for the workers it lacks)."""
    out = []
    for i in range(max(len(a), len(b))):
        h = LatencyHistogram()
        for side in (a, b):
            if i < len(side):
                h.merge(side[i])
        out.append(h)
    return tuple(out)


def kept_fields(
    connections: tuple[int, ...],
    held: tuple[int, ...],
    pool: tuple[int, int] | None,
    by_worker: tuple[LatencyHistogram, ...] = (),
    closes: ServerCloses | None = None,
    pool_fill_s: float | None = None,
    firsts: FirstRequests | None = None,
) -> dict[str, Any]:
    """How a run's file names the kept connections' figures: `connections` (accepted per worker, as the
    replies say), `held_at_end` (per worker, open when the load ended), `worker_histograms` (each worker's
    requests' durations), `first_requests` (FirstRequests: the connections' first requests', a part of the
    histogram and of each worker's, where kept apart), `pool` (opened and planned, and `fill_s`: the seconds the
    fill took, where known), `server_closes` (ServerCloses; only where the server ended some). Nothing for a load
    of one request per connection, whose files stay as they were."""
    data: dict[str, Any] = {}
    if connections:
        data["connections"] = list(connections)
        data["held_at_end"] = list(held)
        data["worker_histograms"] = [h.to_dict() for h in by_worker]
        if firsts is not None:
            data["first_requests"] = firsts.to_dict()
    if pool is not None:
        data["pool"] = {"opened": pool[0], "planned": pool[1]}
        if pool_fill_s is not None:
            data["pool"]["fill_s"] = pool_fill_s
    if closes:
        data["server_closes"] = closes.to_dict()
    return data


def pool_of(data: Mapping[str, Any]) -> tuple[int, int] | None:
    """A run's pool as (opened, planned), None when it had none."""
    pool = data.get("pool")
    return None if not isinstance(pool, Mapping) else (int(pool["opened"]), int(pool["planned"]))


def pool_fill_of(data: Mapping[str, Any]) -> float | None:
    """The seconds a run's pool took to fill, before its load's time began; None without a pool, or in a file
    from before the fill was timed apart (its wall time then holds the fill)."""
    pool = data.get("pool")
    fill = pool.get("fill_s") if isinstance(pool, Mapping) else None
    return None if fill is None else float(fill)
