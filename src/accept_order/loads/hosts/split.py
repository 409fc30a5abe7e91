"""One load as shares for several client hosts, the hosts' clocks, and their results as one.

The connections, the concurrency and an open loop's rate are split as evenly as they go (each host runs its
own --driver-procs). An open loop's schedule is striped: host i starts i/R seconds after host 0 (R the whole
rate), so that the hosts' arrivals interleave rather than coincide. That takes an equal rate on every host
(R/N each): its connections due every N/R, host i's at i/R + k*N/R. The rate is not split as the concurrency
is (the most in flight, which -c 3 over two hosts cannot split evenly): a host with more of the rate than of
the connections would finish early, and the load's last part would run at a fraction of --rate.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from ...core.errors import PlanError
from ...core.histogram import LatencyHistogram
from ...core.measures import DriverStats
from ...core.spec import ConcurrentLoad
from ..generator import split
from ..load_result import LoadResult


def shares(load: ConcurrentLoad, hosts: int) -> list[ConcurrentLoad]:
    """`load` as `hosts` loads, one per host, that add up to it."""
    # --connections first: a concurrency above the connections is cut to them, and '-n 2' read '--concurrency 2'
    if load.connections is not None and load.connections < hosts:
        raise PlanError(f"--connections {load.connections} over {hosts} client hosts: give at least one per host")
    if load.concurrency < hosts:
        raise PlanError(
            f"--concurrency {load.concurrency} over {hosts} client hosts: give at least one connection at a time "
            "per host"
        )
    if load.pool:
        raise PlanError(
            "--pool with --clients: a pool fills one connection after another, which hosts cannot take turns at; "
            "drive the pool from one host"
        )
    slots = split(load.concurrency, hosts)
    counts = split(load.connections, hosts) if load.connections is not None else [None] * hosts
    parts = [
        dataclasses.replace(
            load,
            concurrency=slots[i],
            connections=counts[i],
            rate=None if load.rate is None else load.rate / hosts,
        ).validated()
        for i in range(hosts)
    ]
    # Without the hosts, a part is a load to drive where it is: the host's LoadGenerator then checks it against
    # the host's own open-file limit and CPUs (this host's say nothing of theirs; over its limit, the share's
    # connections would fail with EMFILE, counted as the server's failures)
    return [dataclasses.replace(part, clients=None) for part in parts]


def stripe_s(load: ConcurrentLoad, index: int) -> float:
    """How long after the common start host `index` begins: 0 for a closed loop; i/R for an open one."""
    return 0.0 if load.rate is None else index / load.rate


def clock_offset(samples: Sequence[tuple[float, float, float]]) -> tuple[float, float]:
    """(offset, uncertainty) of a host's clock from (sent, host's time, received) round trips on ours: the
    round trip with the least delay says the most (NTP's choice); the host read its clock somewhere inside
    it, so the offset is known to half that round trip."""
    if not samples:
        raise ValueError("no clock samples")
    sent, theirs, received = min(samples, key=lambda s: s[2] - s[0])
    return theirs - (sent + received) / 2, (received - sent) / 2


def combined(results: Sequence[LoadResult], wall_s: float) -> LoadResult:
    """The hosts' results as one: histograms, failures and per-worker counts add exactly; every driver is
    kept (renumbered, host after host); the wall time is the run's on the coordinator's clock."""
    histogram = LatencyHistogram()
    errors: Counter[str] = Counter()
    served: Counter[int] = Counter()
    drivers: list[DriverStats] = []
    for r in results:
        histogram.merge(r.histogram)
        errors.update(r.errors)
        served.update(r.served)
        drivers += [dataclasses.replace(d, index=len(drivers) + k) for k, d in enumerate(r.drivers)]
    merged = LoadResult(histogram, +errors, served, round(wall_s, 6), drivers)
    kept = [r for r in results if r.connections is not None]
    if kept:
        merged.connections, merged.held, merged.by_worker = Counter(), Counter(), {}
        firsts: dict[int, LatencyHistogram] | None = {} if all(r.firsts is not None for r in kept) else None
        for r in kept:
            merged.connections.update(r.connections or {})
            merged.held.update(r.held or {})
            merged.server_closed.update(r.server_closed)
            merged.told_close.update(r.told_close)
            merged.resent += r.resent
            for who, h in (r.by_worker or {}).items():
                merged.by_worker.setdefault(who, LatencyHistogram()).merge(h)
            if firsts is not None:  # unknown on one host: unknown
                for who, h in (r.firsts or {}).items():
                    firsts.setdefault(who, LatencyHistogram()).merge(h)
        merged.firsts = firsts
    return merged
