"""`burst`'s result: per server and mode, one cell per client count (seed 004's table)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ...core.hosts import HostOutcome
from ...core.load_summary import CountedTotals, LoadSummary, cpu_us_per_connection
from ...core.measures import DriverStats, Environment
from ...core.protocol import ABORTED
from ...core.spec import ServerSpec
from ...results.evidence_shapes import OBSERVED_ON, SHORTAGES
from ...results.host_shapes import hosts_fit_workers
from ...results.schema import ListOf, MapOf, Number, SchemaError, child, derive
from ...results.shapes import (
    NOTES,
    SIGNED,
    SKIPPED,
    STOPPED,
    workers_of,
)

CLIENT_BOUND = 0.5  # share of a burst the client may spend opening its connections before it sets the pace


@dataclass(frozen=True)
class BurstCell(CountedTotals):
    """N clients at once against one server and mode."""

    clients: int
    wall_s: float  # first connect to last reply (or failure)
    served: tuple[int, ...]  # per worker
    errors: dict[str, int]  # failed connections by errno name
    counters: dict[str, int]  # kernel counters that moved during the burst
    drivers: tuple[DriverStats, ...]
    p50_us: int | None = None
    max_us: int | None = None
    interrupted: bool = False
    # Each client's requests over its connection (1: one, and `served` counts connections; K > 1: `served`
    # counts requests, each worker's by their replies) and, then, the connections each worker accepted (as
    # their first replies say). Files of one-request bursts hold neither.
    requests_per_connection: int = 1
    connections: tuple[int, ...] = ()
    hosts: tuple[HostOutcome, ...] = ()  # --client-hosts: what each client host drove of this burst
    # --observe-on: what observe saw on the server's host during this burst, beside its replies' counts (plain
    # data, as a latency run's evidence holds it: experiments/observe/remote.py `joined`); kept with its burst,
    # so each observation is labelled by its size and travels with the cell when a run keeps only some
    observed_on: tuple[dict[str, Any], ...] = ()
    # --client-hosts at a --target whose address is this host's own (servers/remote.py on_this_host): the burst
    # came here, so the counters read here are the server's host's, not a coordinator's (in the file if so)
    through_here: bool = False
    # The handshake packets the server's own listeners dropped over the burst (their sk_drops, over netlink),
    # where the counters' ListenOverflows is every listener's of the namespace; None where not read (a server
    # elsewhere, files from before: not in the file then)
    listener_drops: int | None = None
    # A --target elsewhere (none of this machine's network namespaces) driven from here, or in one whose processes
    # were all gone by the burst's end: `counters` are left empty, this host's being the client's, not the server's
    # (in the file if so)
    server_unread: bool = False
    # A --target's connections whose replies named no worker (a stock page: loads/reply_keys.py): served, on no
    # row of `served` (in the file where any)
    unnamed: int = 0

    @classmethod
    def of(cls, load: LoadSummary, clients: int, counters: dict[str, int], per: int = 1) -> BurstCell:
        return cls(
            requests_per_connection=per,
            connections=load.connections,
            clients=clients,
            wall_s=load.wall_s,
            served=load.served,
            errors=dict(load.errors),
            counters=counters,
            drivers=load.drivers,
            p50_us=load.percentile_us(50),
            max_us=load.max_us,
            interrupted=load.interrupted,
            hosts=load.hosts,
            observed_on=tuple(dict(o) for o in load.observed),
            unnamed=load.unnamed,
        )

    @property
    def ok(self) -> int:
        """Served: the rows' and the replies' that named no worker."""
        return sum(self.served) + self.unnamed

    @property
    def stopped(self) -> int:
        """The connections Ctrl-C (or SIGTERM) found under way in a burst it cut short: the stop's, not failures
        of the server (the load counts them as aborted)."""
        return self.errors.get(ABORTED, 0) if self.interrupted else 0

    @property
    def server_failed(self) -> int:
        """The failures that were the burst's own, not the stop's."""
        return self.failed - self.stopped

    @property
    def open_s(self) -> float | None:
        """How long the load generator took to start every connection of the burst, from the first connect, as
        the burst's wall_s runs: a driver that a busy machine ran late started its connects that much later
        (its own open_s counts from its own start; older files know no driver's start)."""
        times = [(d.started_s or 0.0) + d.open_s for d in self.drivers if d.open_s is not None]
        return max(times) if times else None

    @property
    def client_bound(self) -> bool:
        """The load generator, not the server, set the pace: starting the connections took half the burst.
        Not said over kept connections: a driver's open_s is then when it sent its last request (loads/kept.py),
        near the burst's end whoever set the pace."""
        if self.requests_per_connection != 1:
            return False
        return self.open_s is not None and self.wall_s > 0 and self.open_s > CLIENT_BOUND * self.wall_s

    @property
    def client_cpu_us(self) -> float | None:
        """The load generator's own CPU per connection of the burst, in µs (None: no driver figures)."""
        return cpu_us_per_connection(self.drivers)

    def to_dict(self) -> dict[str, Any]:
        cpu = self.client_cpu_us
        return {
            "clients": self.clients,
            "wall_s": self.wall_s,
            "served": list(self.served),
            "errors": dict(self.errors),
            "counters": dict(self.counters),
            "drivers": [d.to_dict() for d in self.drivers],
            "p50_us": self.p50_us,
            "max_us": self.max_us,
            "interrupted": self.interrupted,
            **({} if cpu is None else {"client_cpu_us": cpu}),  # derived from the drivers, for other tools
            **(
                {}
                if self.requests_per_connection == 1
                else {"requests_per_connection": self.requests_per_connection, "connections": list(self.connections)}
            ),
            **({"hosts": [h.to_dict() for h in self.hosts]} if self.hosts else {}),
            **({"observed_on": [dict(o) for o in self.observed_on]} if self.observed_on else {}),
            **({"through_here": True} if self.through_here else {}),
            **({} if self.listener_drops is None else {"listener_drops": self.listener_drops}),
            **({"server_unread": True} if self.server_unread else {}),
            **({"unnamed": self.unnamed} if self.unnamed else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BurstCell:
        from ...results.typed import build, hosts_of

        return cls(
            clients=int(data["clients"]),
            wall_s=float(data["wall_s"]),
            served=tuple(int(n) for n in data["served"]),
            errors={str(k): int(v) for k, v in data["errors"].items()},
            counters={str(k): int(v) for k, v in data.get("counters", {}).items()},
            drivers=tuple(build(DriverStats, d) for d in data.get("drivers", [])),
            p50_us=data.get("p50_us"),
            max_us=data.get("max_us"),
            interrupted=bool(data.get("interrupted", False)),
            requests_per_connection=int(data.get("requests_per_connection", 1)),
            connections=tuple(int(n) for n in data.get("connections", ())),
            hosts=hosts_of(data),
            observed_on=tuple(dict(o) for o in data.get("observed_on", ())),
            through_here=bool(data.get("through_here", False)),
            listener_drops=None if data.get("listener_drops") is None else int(data["listener_drops"]),
            server_unread=bool(data.get("server_unread", False)),
            unnamed=int(data.get("unnamed", 0)),
        )


@dataclass(frozen=True)
class BurstRun:
    """Every burst against one server and mode."""

    server: ServerSpec
    cells: tuple[BurstCell, ...]
    environment: Environment | None
    interrupted: bool = False
    shortages: tuple[dict[str, Any], ...] = ()  # what a launched server logged running out of (evidence)
    # Over kept connections: the requests each worker says it answered over all the bursts (its own count,
    # beside the replies'); empty otherwise, or when a worker does not count them
    worker_requests: tuple[int, ...] = ()
    # An error ended it after these cells (a client host lost, a driver that died): why. --repeat keeps such a
    # run apart from whole ones (repeat/run.py whole()): unmarked, it completed its round and entered the medians
    stopped: str | None = None
    # A --target whose kernel counters were read in the namespace a connection made to it before the load landed
    # in (two of this machine's hold its address, or NAT sent it on): how, as evidence.counters_landed says
    counters_landed: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server.to_dict(),
            "cells": [c.to_dict() for c in self.cells],
            "environment": asdict(self.environment) if self.environment else None,
            "interrupted": self.interrupted,
            **({"shortages": [dict(s) for s in self.shortages]} if self.shortages else {}),
            **({"worker_requests": list(self.worker_requests)} if self.worker_requests else {}),
            **({"stopped": self.stopped} if self.stopped else {}),
            **({"counters_landed": self.counters_landed} if self.counters_landed else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BurstRun:
        from ...results.typed import build

        env = data.get("environment")
        return cls(
            server=build(ServerSpec, data["server"]),
            cells=tuple(BurstCell.from_dict(c) for c in data["cells"]),
            environment=build(Environment, env) if env else None,
            interrupted=bool(data.get("interrupted", False)),
            shortages=tuple(dict(s) for s in data.get("shortages", []) if isinstance(s, Mapping)),
            worker_requests=tuple(int(n) for n in data.get("worker_requests", ())),
            stopped=data.get("stopped"),
            counters_landed=data.get("counters_landed"),
        )


@dataclass(frozen=True)
class BurstResult:
    runs: tuple[BurstRun, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    interrupted: bool = False  # Ctrl-C or SIGTERM ended it: the runs are those that got that far
    # An error ended it after some bursts (a client host lost, a driver that could not start): why. The runs
    # are those that got that far, the last one's cells the bursts measured before the error.
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        doc = {"runs": [r.to_dict() for r in self.runs], "skipped": dict(self.skipped), "notes": list(self.notes)}
        return (
            doc
            | ({"interrupted": True} if self.interrupted else {})
            | ({"stopped": self.stopped} if self.stopped else {})
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BurstResult:
        runs = data["runs"]
        if not isinstance(runs, list):
            raise TypeError("'runs' is not a list")
        return cls(
            tuple(BurstRun.from_dict(r) for r in runs),
            dict(data.get("skipped", {})),
            tuple(str(n) for n in data.get("notes", [])),
            bool(data.get("interrupted", False)),
            data.get("stopped"),
        )


def _cells_fit_workers(run: Mapping[str, Any], at: str) -> None:
    workers = workers_of(run)
    if len(run.get("worker_requests", [])) > workers:
        raise SchemaError(child(at, "worker_requests"), f"has more entries than the server's {workers} workers")
    for index, cell in enumerate(run["cells"]):
        for name in ("served", "connections"):
            if len(cell.get(name, [])) > workers:
                where = child(child(child(at, "cells"), index), name)
                raise SchemaError(where, f"has {len(cell[name])} entries, one per worker, but the server had {workers}")
        hosts_fit_workers({**cell, "server": run.get("server", {})}, child(child(at, "cells"), index))


_CELL = derive(
    BurstCell,
    counters=MapOf(SIGNED),
    client_cpu_us=Number(),
    observed_on=ListOf(OBSERVED_ON),
    optional=("counters", "drivers"),
)
BURST_RUN = derive(BurstRun, cells=ListOf(_CELL), shortages=SHORTAGES, stopped=STOPPED, rules=(_cells_fit_workers,))
BURST_SHAPE = derive(BurstResult, runs=ListOf(BURST_RUN), skipped=SKIPPED, notes=NOTES, stopped=STOPPED)
