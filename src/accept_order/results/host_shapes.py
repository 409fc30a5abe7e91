"""What a result file holds of the client hosts that drove a run (--clients: core/hosts.py): each host's outcome,
and the rules that its counts fit the server's workers and add up to the run's own."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..core.hosts import HostOutcome
from .schema import (
    MAX_COUNT,
    Anything,
    Integer,
    ListOf,
    MapOf,
    Maybe,
    Number,
    Record,
    SchemaError,
    Text,
    child,
    known,
)
from .shapes import COUNTS, DRIVER_STATS, ERRORS, HISTOGRAM, histogram_total, workers_of

_SECONDS = Number(-float(MAX_COUNT), float(MAX_COUNT))  # a clock's offset, a start before the common one


def _host_served_adds_up(host: Mapping[str, Any], at: str) -> None:
    """A host's `served_total` (derived, for other tools) is what its histogram holds, and its `unnamed` (derived)
    what of that no worker's count holds."""
    total, held = host.get("served_total"), histogram_total(host["histogram"])
    if total is not None and total != held:
        raise SchemaError(child(at, "served_total"), f"is {total}, but the host's histogram holds {held}")
    unnamed, off_rows = host.get("unnamed"), held - sum(host.get("served", ()))
    if unnamed is not None and unnamed != off_rows:
        raise SchemaError(
            child(at, "unnamed"),
            f"is {unnamed}, but the host's histogram holds {off_rows} beyond its served per worker",
        )


# What one client host drove, as HostOutcome.to_dict writes it (its derived figures: served_total, unnamed,
# requests_per_s, client_cpu_us_per_connection, rebuilt when read)
HOST_OUTCOME = known(
    HostOutcome,
    Record(
        {
            "destination": Text(1024),
            "served": COUNTS,
            "served_total": Integer(),
            "unnamed": Integer(),
            "failed": ERRORS,
            "requests_per_s": Number(),
            "client_cpu_us_per_connection": Maybe(Number()),
            "wall_s": Number(),
            "histogram": HISTOGRAM,
            "drivers": ListOf(DRIVER_STATS),
            "clock_offset_s": Maybe(_SECONDS),
            "clock_uncertainty_s": Maybe(Number()),
            "started_s": Maybe(_SECONDS),
            "ended_s": Maybe(_SECONDS),
            "lost": Maybe(Text()),
            "due_s": Maybe(_SECONDS),
            "python": Text(),
            "version": Text(),
            "extra": MapOf(Anything()),
            "boot_id": Text(64),
        },
        frozenset({"destination", "histogram"}),
        (_host_served_adds_up,),
    ),
)
HOSTS = ListOf(HOST_OUTCOME)


def hosts_fit_workers(run: Mapping[str, Any], at: str) -> None:
    """Each client host's `served` of a run (or of a burst's cell, a ramp's step: `run` is then its server's
    part too) has at most one count per worker; its destinations are each named once."""
    workers = workers_of(run)
    seen: set[str] = set()
    for index, host in enumerate(run.get("hosts", [])):
        where = child(child(at, "hosts"), index)
        if len(host.get("served", [])) > workers:
            raise SchemaError(
                child(where, "served"),
                f"has {len(host['served'])} entries, one per worker, but the server had {workers}",
            )
        if host["destination"] in seen:
            raise SchemaError(child(where, "destination"), "names a host already given: each host is one entry")
        seen.add(host["destination"])


def hosts_add_up(run: Mapping[str, Any], at: str) -> None:
    """The run's histogram, failures and per-worker counts are its client hosts' added (none counted twice,
    none left out): a run with `hosts` was driven from them only (a lost host's connections are in neither)."""
    hosts = run.get("hosts")
    if not hosts:
        return
    durations: Counter[int] = Counter()
    failed: Counter[str] = Counter()
    for host in hosts:
        durations.update({us: n for us, n in host["histogram"]["counts"]})
        failed.update(host.get("failed", {}))
    own = Counter({us: n for us, n in run["histogram"]["counts"]})
    if +durations != +own:
        raise SchemaError(
            child(at, "hosts"),
            f"the hosts' histograms hold {sum(durations.values())} samples that are not the run's "
            f"{sum(own.values())} (each host's are part of the run's, exactly)",
        )
    if +failed != +Counter(run.get("errors", {})):
        raise SchemaError(child(at, "hosts"), "the hosts' failures are not the run's (errors): they add up to them")
    served: Counter[int] = Counter()  # per worker: a host's count of a worker it did not reach may be left out
    for host in hosts:
        served.update(dict(enumerate(host.get("served", []))))
    if +served != +Counter(dict(enumerate(run.get("served", [])))):
        raise SchemaError(
            child(at, "hosts"), "the hosts' per-worker counts (served) are not the run's: they add up to them"
        )
