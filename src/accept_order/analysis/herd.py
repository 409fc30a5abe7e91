"""The thundering herd, measured: how many workers one connection woke.

Each worker counts its own wait returns and empty (EAGAIN) returns, and the kernel's per-process
context-switch counters count the wakeups that never reach user space: without EPOLLEXCLUSIVE, poll and
select, every idle worker is woken, the kernel rechecks readiness and puts most of them straight back to
sleep. Each of those sleeps is one voluntary context switch, so where a worker blocks only to wait for a
connection (ModeInfo.switches_are_wakeups) its voluntary switches per served connection count the workers one
connection woke: "woken" in the herd table and a herd's verdict. They are sleeps, not wakeups: a worker that finds
the next connection already queued takes it without sleeping, so a busy run counts fewer than one.

The table also puts each cure's price next to it: CPU per served connection (all workers', plus the
acceptor process's for a mode that has one, fd-pass) and the latency of the sequential connections.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.kinds import ModeInfo
from .wakeups import HERD_THRESHOLD as HERD_THRESHOLD  # where the herd commands and tests read it
from .wakeups import woken_per_connection as woken_per_connection
from .wakeups import workers_woken


@dataclass(frozen=True)
class HerdRow:
    """One mode's line of the herd table, summed over its workers."""

    mode: str
    workers: int
    served: int
    failed: int
    # None where a worker does not count them (a launched server's: only this tool's workers do), not 0
    wakeups: int | None  # wait calls that returned to user space
    accepts: int | None
    empty: int | None  # returns that found nothing (EAGAIN): woken, but another worker took it
    max_batch: int | None
    voluntary: int | None  # kernel wakeups: every sleep after a wakeup is one voluntary switch
    involuntary: int | None
    cpu_s: float | None
    cpu_s_per_worker: tuple[float | None, ...]
    woken_per_connection: float | None
    herds: bool  # the mode's mechanism predicts a herd (its metadata)
    # Added with fd-pass; defaults keep older callers working.
    acceptor_cpu_s: float | None = None  # the acceptor process's CPU (fd-pass); None: no acceptor
    cpu_us_per_connection: float | None = None  # workers' CPU + the acceptor's, per served connection
    latency_p50_us: int | None = None  # served connections, connect to end of reply (nearest rank)
    latency_p99_us: int | None = None
    acceptor_woken_per_connection: float | None = None  # the acceptor's sleeps per served connection

    @property
    def accepts_per_wakeup(self) -> float | None:
        if self.accepts is None or self.wakeups is None:
            return None
        return self.accepts / self.wakeups if self.wakeups else 0.0

    @property
    def herd(self) -> bool | None:
        """True if one connection woke more than one worker; None when it could not be measured."""
        if self.woken_per_connection is None:
            return None
        return self.woken_per_connection >= HERD_THRESHOLD

    @property
    def expected_woken(self) -> int:
        return self.workers if self.herds else 1

    @property
    def as_expected(self) -> bool | None:
        herd = self.herd
        if herd is None or self.workers < 2:
            return None
        return herd == self.herds

    def verdict(self) -> str:
        w = self.woken_per_connection
        if w is None and self.voluntary is not None and self.served:
            # HAProxy's and h2o's threads also sleep between a connection's reads: their sleeps were counted
            # (the sleeps column) but count no wakeups, where 'no context-switch counts' denied the column beside it
            return "not measured: its workers sleep for more than connections (sleeps are not wakeups)"
        if w is None:
            return "not measured (no context-switch counts or nothing served)"
        if self.herd:
            return f"herd: wakes ~{round(workers_woken(w, self.workers))} of {self.workers}"
        return "no herd: wakes 1"


def _sum_opt(values: Iterable[int | float | None]) -> Any:
    items = list(values)
    return None if any(v is None for v in items) else sum(v for v in items if v is not None)


def nearest_rank(values: Sequence[int], q: float) -> int | None:
    """Nearest-rank percentile: the smallest value with at least q% of the values <= it; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = math.ceil(q * len(ordered) / 100)
    return ordered[min(max(rank, 1), len(ordered)) - 1]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def acceptor_of(evidence: Any) -> Mapping[str, Any] | None:
    """The run's acceptor report (fd-pass), or None for a mode without one (or an older file)."""
    acceptor = evidence.get("acceptor") if isinstance(evidence, Mapping) else None
    return acceptor if isinstance(acceptor, Mapping) else None


def herd_row(result: Any, mode: ModeInfo | None) -> HerdRow:
    """A RunResult's line of the herd table; `mode`: what its mode predicts (None: a mode this version does
    not know, from a file)."""
    counters = result.counters
    cpu = _sum_opt(c.cpu_s for c in counters)
    served = result.served
    acceptor = acceptor_of(result.evidence)
    acceptor_cpu = None if acceptor is None else _number(acceptor.get("cpu_s"))
    acceptor_sleeps = None if acceptor is None else _number(acceptor.get("voluntary_switches"))
    cpu_known = cpu is not None and (acceptor is None or acceptor_cpu is not None)
    cpu_per_connection = round((cpu + (acceptor_cpu or 0.0)) * 1e6 / served, 3) if cpu_known and served else None
    latencies = [r.latency_us for r in result.records if r.served]
    return HerdRow(
        mode=result.server.mode,
        workers=result.server.workers,
        served=result.served,
        failed=result.failed,
        # a launched server's workers count none of these: '-', where 0 beside 'herd: wakes ~4 of 4' read as none
        wakeups=_sum_opt(c.wakeups for c in counters),
        accepts=_sum_opt(c.accepts for c in counters),
        empty=_sum_opt(c.empty for c in counters),
        max_batch=None
        if any(c.max_batch is None for c in counters)
        else max((c.max_batch or 0 for c in counters), default=0),
        voluntary=_sum_opt(c.voluntary_switches for c in counters),
        involuntary=_sum_opt(c.involuntary_switches for c in counters),
        cpu_s=None if cpu is None else round(cpu, 6),
        cpu_s_per_worker=tuple(c.cpu_s for c in counters),
        woken_per_connection=result.verdict.woken_per_connection,
        herds=mode.herds if mode is not None else False,
        acceptor_cpu_s=acceptor_cpu,
        cpu_us_per_connection=cpu_per_connection,
        latency_p50_us=nearest_rank(latencies, 50),
        latency_p99_us=nearest_rank(latencies, 99),
        acceptor_woken_per_connection=(acceptor_sleeps / served if acceptor_sleeps is not None and served else None),
    )
