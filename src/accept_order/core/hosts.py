"""Load from several client hosts: where it runs (`ClientHosts`, part of a load's spec) and what each host did
(`HostOutcome`, part of its result).

The hosts are reached over ssh through an existing engine (execnet: loads/hosts/); these types are plain data,
so that results and reports read them without importing the engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import PlanError
from .histogram import LatencyHistogram
from .measures import DriverStats
from .totals import TimedTotals, add_counts, add_errors, add_histograms, add_walls, cpu_us_per_connection

MAX_CLIENT_HOSTS = 256  # ssh fan-out from one coordinator: beyond this, see docs/howto/cluster.md


@dataclass(frozen=True)
class ClientHosts:
    """The client hosts a load runs on: ssh destinations as the user's own `ssh` accepts them (`host`,
    `user@host`, an alias of ~/.ssh/config), ssh's `-F` config file, and the Python to run there (None: the
    coordinator's own interpreter path where it exists on the host, else `python3`)."""

    destinations: tuple[str, ...]
    ssh_config: str | None = None
    python: str | None = None
    # --observe-on: the server's host, where `observe` watches the server's port for the load's window (over
    # the same engine); None: not observed. The only host there may be (no --clients: the load runs here).
    observe_on: str | None = None

    def validated(self, option: str = "--clients") -> ClientHosts:
        """`option`: what the user named the hosts with (burst's --clients counts connections: --client-hosts)."""
        if not self.destinations and self.observe_on is None:
            raise PlanError(f"{option} needs at least one ssh destination")
        if len(self.destinations) > MAX_CLIENT_HOSTS:
            raise PlanError(f"{option} names {len(self.destinations)} hosts; at most {MAX_CLIENT_HOSTS}")
        named = [(option, d) for d in self.destinations]
        for option, dest in named + ([("--observe-on", self.observe_on)] if self.observe_on is not None else []):
            # ssh would read a destination that starts with '-' as an option, and a space splits it in two
            if not dest or dest.startswith("-") or any(c.isspace() or not c.isprintable() for c in dest):
                raise PlanError(f"{option}: {dest!r} is not an ssh destination")
        if len(set(self.destinations)) != len(self.destinations):
            raise PlanError(f"{option} names a host twice: give each once (its --driver-procs are per host)")
        for name, value in (("--ssh-config", self.ssh_config), ("--client-python", self.python)):
            if value is not None and (not value or any(c.isspace() or not c.isprintable() for c in value)):
                raise PlanError(f"{name} {value!r} is not a path")
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "destinations": list(self.destinations),
            "ssh_config": self.ssh_config,
            "python": self.python,
            **({"observe_on": self.observe_on} if self.observe_on is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClientHosts:
        return cls(tuple(data["destinations"]), data.get("ssh_config"), data.get("python"), data.get("observe_on"))

    def only(self, destination: str) -> ClientHosts:
        """The same ssh settings for one host (the server's, for --observe-on)."""
        return ClientHosts((destination,), self.ssh_config, self.python)


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
        )


def extended(a: tuple[HostOutcome, ...], b: tuple[HostOutcome, ...], concurrent: bool) -> tuple[HostOutcome, ...]:
    """The hosts of two loads (a burst's cells, a ramp's steps) as one load's: a host in both has its counts
    and durations added, its wall times added (one load after the other) or the longer kept (at once)."""
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
                ended_s=o.ended_s if not concurrent else h.ended_s,
                lost=h.lost or o.lost,
            )
        )
    return (*out, *later.values())
