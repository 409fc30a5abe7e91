"""What one client host drove in a load over client hosts (--clients): part of the load's result. Apart from
hosts.py (the hosts a load runs on, which every spec imports), which names it on first use (issue 30)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
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
            # what it served on no worker's row (a --target's replies that named none), where some were: its `served`
            # are then the named counts, not the worker's ('0 0' read as each worker's beside 50 served)
            **({"unnamed": unnamed} if (unnamed := self.ok - sum(self.served)) > 0 else {}),
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


def hosts_lost_in(result: object, loads: Sequence[object] = ()) -> tuple[dict[str, str], list[set[str]]]:
    """In one walk of a result (a run, a comparison's runs, a sweep's caps, a burst's cells, a ramp's steps,
    --repeat's rounds): the client hosts lost anywhere in it, each with why it was first lost, in the order met
    (mid-load, or not reached again for a later load); and for each of `loads` (its parts: each mode's run, each
    round's), the hosts that drove their share of it to its end, an outcome each and none of them lost (a host lost
    in one mode and reached again for the next reported the second). The walk goes through the result's dataclasses
    and their sequences, so that every command judges its own result the same way; mappings (evidence) are not
    walked: no host outcome is kept in one. A load is met in it by identity; one that is not is walked on its own.
    The commands walked it once for the lost hosts and twice for each load, all of it twice at their end."""
    marks = {id(load): i for i, load in enumerate(loads)}
    lost: dict[str, str] = {}
    seen: list[set[str]] = [set() for _ in loads]
    lost_in: list[set[str]] = [set() for _ in loads]
    met: set[int] = set()

    def take(walk: Iterator[tuple[HostOutcome, tuple[int, ...]]], in_result: bool) -> None:
        for host, inside in walk:
            if in_result and host.lost is not None:
                lost.setdefault(host.destination, host.lost)
            for i in inside:
                seen[i].add(host.destination)
                if host.lost is not None:
                    lost_in[i].add(host.destination)

    take(_outcomes(result, marks, (), met), True)
    for i, load in enumerate(loads):
        if i not in met:
            take(_outcomes(load, {id(load): i}, (), met), False)
    return lost, [every - gone for every, gone in zip(seen, lost_in, strict=True)]


def _outcomes(
    value: object, marks: Mapping[int, int], inside: tuple[int, ...], met: set[int]
) -> Iterator[tuple[HostOutcome, tuple[int, ...]]]:
    """Each host outcome in `value`, with the loads (`marks`: a load's id -> its index) it is inside of; `met`
    gathers the loads met."""
    mark = marks.get(id(value))
    if mark is not None:
        met.add(mark)
        inside = (*inside, mark)
    if isinstance(value, HostOutcome):
        yield value, inside
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _outcomes(getattr(value, f.name), marks, inside, met)
    elif isinstance(value, (tuple, list)):
        for item in value:
            if not (dataclasses.is_dataclass(item) or isinstance(item, (tuple, list))):
                return  # numbers or names: no host outcome in this sequence
            yield from _outcomes(item, marks, inside, met)
