"""What one client host drove in a load over client hosts (--clients): part of the load's result. Apart from
hosts.py (the hosts a load runs on, which every spec imports), which names it on first use (issue 30)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .driver_stats import DriverStats
from .histogram import LatencyHistogram
from .totals import TimedTotals, add_counts, add_errors, add_histograms, add_walls, cpu_us_per_connection

# Why a kept host is lost to a later load it could not be reached for (loads/hosts/driven.py): it drove none of that
# load, whose shares were split again over the others (a host lost mid-load drove its share, into no count here)
NOT_REACHED = "not reached for this load"


@dataclass(frozen=True)
class HostOutcome(TimedTotals):
    """What one client host drove: its destination as given, what it served per worker and failed by errno,
    its served durations, its drivers; its clock's offset to the coordinator's (host minus coordinator,
    seconds) with the uncertainty (half the best round trip); when it started and ended, in seconds after
    the run's common start on the coordinator's clock; `lost`: why it stopped reporting (None: it reported)."""

    destination: str
    histogram: LatencyHistogram
    errors: Mapping[str, int]
    served: tuple[int, ...]
    wall_s: float
    drivers: tuple[DriverStats, ...] = ()
    offset_s: float | None = None
    uncertainty_s: float | None = None
    started_s: float | None = None
    ended_s: float | None = None
    lost: str | None = None
    # when it was to start, after the common start: an open loop's stripe, 0 for the first (None: a closed loop's
    # host, due at the common start, or a file from before due_s, whose hosts were due by their places)
    due_s: float | None = None
    python: str = ""
    version: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. the kept-connections counts of the host
    # its kernel's boot_id ("": not read, or a file from before it): the coordinator's own (evidence["machine"])
    # where the host shares this machine's kernel and CPUs (localhost, a network namespace, a container)
    boot_id: str = ""

    @property
    def had_share(self) -> bool:
        """Whether the load was split over this host: not where it was not reached for it (the others drove it)."""
        return not (self.lost or "").startswith(NOT_REACHED)

    @property
    def client_cpu_us(self) -> float | None:
        """This host's load generator's CPU per connection it finished, in µs."""
        return cpu_us_per_connection(self.drivers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "destination": self.destination,
            "served": list(self.served),
            "served_total": self.ok,
            "failed": dict(self.errors),
            "requests_per_s": round(self.throughput, 1),
            "client_cpu_us_per_connection": self.client_cpu_us,
            "wall_s": self.wall_s,
            "histogram": self.histogram.to_dict(),
            "drivers": [d.to_dict() for d in self.drivers],
            "clock_offset_s": self.offset_s,
            "clock_uncertainty_s": self.uncertainty_s,
            "started_s": self.started_s,
            "ended_s": self.ended_s,
            "lost": self.lost,
            **({"due_s": self.due_s} if self.due_s is not None else {}),
            "python": self.python,
            "version": self.version,
            **({"extra": dict(self.extra)} if self.extra else {}),
            **({"boot_id": self.boot_id} if self.boot_id else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HostOutcome:
        return cls(
            destination=str(data["destination"]),
            histogram=LatencyHistogram.from_dict(data["histogram"]),
            errors={str(k): int(v) for k, v in data.get("failed", {}).items()},
            served=tuple(int(n) for n in data.get("served", ())),
            wall_s=float(data.get("wall_s", 0.0)),
            drivers=tuple(DriverStats.from_dict(d) for d in data.get("drivers", ())),
            offset_s=data.get("clock_offset_s"),
            uncertainty_s=data.get("clock_uncertainty_s"),
            started_s=data.get("started_s"),
            ended_s=data.get("ended_s"),
            lost=data.get("lost"),
            due_s=data.get("due_s"),
            python=str(data.get("python", "")),
            version=str(data.get("version", "")),
            extra=dict(data.get("extra", {})),
            boot_id=str(data.get("boot_id", "")),
        )


def extended(a: tuple[HostOutcome, ...], b: tuple[HostOutcome, ...], concurrent: bool) -> tuple[HostOutcome, ...]:
    """The hosts of two loads (a burst's cells, a ramp's steps) as one load's: a host in both has its counts
    and durations added, its wall times added (one load after the other) or the longer kept (at once). Each file's
    hosts' ends were timed from its own load's start, so no end is kept where both have hosts (nor one after the
    other): compared, a host of the shorter load read as ending before one of the longer, and the report named a
    straggler among them. At once, two runs' starts are known to the second only (started_at), not aligned."""
    if not concurrent or (a and b):
        a, b = _unended(a), _unended(b)
    if not a or not b:
        return a or b
    later = {h.destination: h for h in b}
    out = []
    for h in a:
        o = later.pop(h.destination, None)
        if o is None:
            out.append(h)
            continue
        out.append(
            dataclasses.replace(
                h,
                histogram=add_histograms(h.histogram, o.histogram),
                errors=add_errors(h.errors, o.errors),
                served=add_counts(h.served, o.served),
                wall_s=add_walls(h.wall_s, o.wall_s, concurrent),
                drivers=h.drivers + o.drivers,
                ended_s=h.ended_s,
                lost=h.lost or o.lost,
            )
        )
    return (*out, *later.values())


def _unended(hosts: tuple[HostOutcome, ...]) -> tuple[HostOutcome, ...]:
    return tuple(dataclasses.replace(h, ended_s=None) for h in hosts)


def lost_hosts(result: object) -> dict[str, str]:
    """The client hosts lost anywhere in a result (a run, a comparison's runs, a sweep's caps, a burst's cells, a
    ramp's steps, --repeat's rounds), each with why it was first lost, in the order met: mid-load, or not reached
    again for a later load. Found by walking the result's dataclasses and their sequences, so that every command
    judges its own result the same way; mappings (evidence) are not walked: no host outcome is kept in one."""
    lost: dict[str, str] = {}
    for host in _outcomes(result):
        if host.lost is not None:
            lost.setdefault(host.destination, host.lost)
    return lost


def reported(load: object) -> set[str]:
    """The client hosts that drove their share of a load (or of every load in it) to its end: an outcome each,
    none of them lost. A host lost in one mode and reached again for the next reported the second."""
    outcomes = list(_outcomes(load))
    lost = {h.destination for h in outcomes if h.lost is not None}
    return {h.destination for h in outcomes} - lost


def _outcomes(value: object) -> Iterator[HostOutcome]:
    if isinstance(value, HostOutcome):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _outcomes(getattr(value, f.name))
    elif isinstance(value, (tuple, list)):
        for item in value:
            if not (dataclasses.is_dataclass(item) or isinstance(item, (tuple, list))):
                return  # numbers or names: no host outcome in this sequence
            yield from _outcomes(item)
