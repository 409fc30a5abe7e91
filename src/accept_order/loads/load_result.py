"""What a load's drivers measured, merged (LoadResult): the drivers' reports added up, per-worker counts placed on
worker indices where they were counted by reply key, and the summary a result file keeps. It crosses to and from
client hosts pickled (loads/hosts/): a host's loads/ must hold this code (compared at the hello:
remote_side.sources_digests)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.first_requests import FirstRequests
from ..core.histogram import LatencyHistogram
from ..core.hosts import HostOutcome
from ..core.load_summary import LoadSummary, ServerCloses, TimedTotals
from ..core.measures import DriverStats
from .reply_keys import UNNAMED


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
    # worker index -> its connections' first requests' durations (a part of by_worker's: they also waited to be
    # accepted); None where a driver did not keep them apart
    firsts: dict[int, LatencyHistogram] | None = None
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
            firsts=None if self.firsts is None else {indices[k]: h for k, h in self.firsts.items()},
            server_closed=moved(self.server_closed),
            told_close=moved(self.told_close),
            reply_keys=dict(indices),
        )

    def keys(self) -> set[int]:
        """Every worker (index, or reply key before `placed`) a per-worker count names."""
        named = set(self.served) | set(self.server_closed) | set(self.told_close)
        for counts in (self.connections, self.held, self.by_worker, self.firsts):
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
            firsts=None if self.firsts is None else _first_requests(self.firsts, workers),
            # those on no worker's row (-1: a connection no reply named a worker of, nor the client found the holder
            # of) counted apart, as served's unnamed, not dropped with the rows
            closes=ServerCloses(
                per_worker(self.server_closed),
                per_worker(self.told_close),
                self.resent,
                self.server_closed.get(UNNAMED, 0),
                self.told_close.get(UNNAMED, 0),
            )
            if self.server_closed or self.told_close or self.resent
            else ServerCloses(),
            hosts=tuple(
                dataclasses.replace(h, served=tuple(h.served[i] if i < len(h.served) else 0 for i in range(workers)))
                for h in self.hosts
            ),
            # placed by reply key: what replies naming no worker served (an attached server's -1 is the kernel's)
            unnamed=self.served.get(UNNAMED, 0) if self.reply_keys is not None else 0,
        )


def _first_requests(firsts: dict[int, LatencyHistogram], workers: int) -> FirstRequests:
    """The connections' first requests: all of them (those no reply named a worker of too: an attached server's,
    counted as -1), and per worker index."""
    every = LatencyHistogram()
    for h in firsts.values():
        every.merge(h)
    return FirstRequests(every, tuple(firsts.get(i, LatencyHistogram()) for i in range(workers)))


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
        # every driver keeps its connections' first requests apart (KeptTally), or the result cannot say them
        firsts: dict[int, LatencyHistogram] | None = {} if all("first_counts" in r for r in kept) else None
        for r in kept:
            result.connections.update(r["connections"])
            result.held.update(r["held"])
            result.server_closed.update(r.get("server_closed", {}))
            result.told_close.update(r.get("told_close", {}))
            result.resent += r.get("resent", 0)
            for who, counts in r["worker_counts"].items():
                for us, n in counts:
                    result.by_worker.setdefault(who, LatencyHistogram()).add(us, n)
            if firsts is not None:
                for who, counts in r["first_counts"].items():
                    mine = firsts.setdefault(who, LatencyHistogram())
                    for us, n in counts:
                        mine.add(us, n)
        result.firsts = firsts
        pools = [r["pool"] for r in kept if "pool" in r]
        if pools:
            result.pool = (sum(p["opened"] for p in pools), sum(p["planned"] for p in pools))
            # the drivers fill the pool in turns from the same go: the last to see it filled ends the fill
            result.pool_fill_s = max(p["fill_s"] for p in pools)
    return result
