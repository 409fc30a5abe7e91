"""The totals every result of a load derives the same way: served, failed, driven, throughput; and the load
generator's own CPU per connection. `LoadTotals` (timed or counted) holds them, so no result counts "failed"
or "driven" on its own (core/load_summary.py re-exports them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..core.histogram import LatencyHistogram
from .driver_stats import DriverStats


def cpu_us_per_connection(drivers: Iterable[DriverStats]) -> float | None:
    """The load generator's own CPU per connection it finished (served or failed), in µs: what driving one
    costs the client on this machine, beside what serving it costs (None: no driver finished one)."""
    drivers = list(drivers)
    finished = sum(d.requests for d in drivers)
    return round(1e6 * sum(d.cpu_s for d in drivers) / finished, 1) if finished else None


def loops_ran(drivers: Iterable[DriverStats]) -> str:
    """The loops the load generator ran ("io_uring"; "epoll and io_uring" where client hosts decided apart);
    "" when no driver says (files before 0.3, whose drivers ran epoll)."""
    return " and ".join(sorted({d.loop for d in drivers if d.loop}))


class LoadTotals:
    """Totals of a load's result, from how many were served (`ok`) and its `errors` by errno name."""

    errors: Mapping[str, int]
    wall_s: float

    @property
    def ok(self) -> int:
        """Connections served."""
        raise NotImplementedError

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    @property
    def driven(self) -> int:
        """Every connection driven: served or failed, none uncounted."""
        return self.ok + self.failed

    @property
    def requests(self) -> int:
        """`driven`'s name before 0.3 (a latency result's), for older callers of the Python API."""
        return self.driven

    @property
    def throughput(self) -> float:
        """Served connections per second of load."""
        return self.ok / self.wall_s if self.wall_s > 0 else 0.0


class TimedTotals(LoadTotals):
    """A load that kept every served connection's duration: served is the histogram's count."""

    histogram: LatencyHistogram

    @property
    def ok(self) -> int:
        return self.histogram.count


class CountedTotals(LoadTotals):
    """A load that kept per-worker counts (and percentiles only): served is their sum."""

    served: tuple[int, ...]

    @property
    def ok(self) -> int:
        return sum(self.served)


# -- two loads' figures as one load's (LoadSummary.extend, and each client host's: core/hosts.py) ---------------


def add_counts(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Per-worker counts added worker by worker (the shorter list counts 0 for the workers it lacks)."""
    width = max(len(a), len(b))
    return tuple((a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(width))


def add_histograms(a: LatencyHistogram, b: LatencyHistogram) -> LatencyHistogram:
    """Both loads' durations in one histogram (a new one: neither is changed)."""
    histogram = LatencyHistogram()
    histogram.merge(a)
    histogram.merge(b)
    return histogram


def add_errors(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """Failures by errno name, added."""
    errors = dict(a)
    for name, n in b.items():
        errors[name] = errors.get(name, 0) + n
    return errors


def add_walls(a: float, b: float, concurrent: bool) -> float:
    """Two loads' wall time as one's: at the same moment, the longer; one after the other, both."""
    return round(max(a, b) if concurrent else a + b, 6)
