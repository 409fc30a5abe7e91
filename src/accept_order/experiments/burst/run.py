"""The burst experiment (seed 004's table): N clients connect at once; how long until every one is served?

One server per (server, mode), started once through session.lifecycle; against it, one burst per client
count, smallest first, each a closed loop whose every slot makes exactly one connection (so all N connects
go out at once, split over the driver processes). Per burst: the time from the first connect to the last
reply, the failures by errno, the spread over workers, and the kernel's overflow counters around it.

The client side must not be the bottleneck: the drivers' own CPU and run-queue wait are kept, and a burst
whose drivers were CPU-bound or starved says so. Limits are checked before anything starts: open files
(the soft limit is raised to what the largest burst needs, up to the hard limit) and local ports.
"""

from __future__ import annotations

import resource
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import PlanError
from ...probes import netstat
from ...session import RunInterrupted, drive_load, lifecycle, run_each
from ...spec import FD_MARGIN, MAX_DRIVER_PROCS, ConcurrentLoad, ServerSpec, check_range, local_ports
from .result import BurstCell, BurstRun

MAX_CLIENTS = 1_000_000


@dataclass(frozen=True)
class BurstPlan:
    clients: tuple[int, ...] = (1000, 3000, 5000)
    driver_procs: int = 2
    timeout_s: float = 10.0

    def validated(self) -> BurstPlan:
        if not self.clients:
            raise PlanError("--clients needs at least one count")
        for n in self.clients:
            check_range("--clients", n, 1, MAX_CLIENTS)
        check_range("--driver-procs", self.driver_procs, 1, MAX_DRIVER_PROCS)
        check_range("--timeout", self.timeout_s, 0.001, 3600, "s")
        return self

    def load(self, clients: int) -> ConcurrentLoad:
        """A burst as a closed loop: as many slots as connections, so each slot connects once, at once."""
        procs = min(self.driver_procs, clients)
        return ConcurrentLoad(connections=clients, concurrency=clients, driver_procs=procs, timeout_s=self.timeout_s)


def make_room(clients: int) -> str | None:
    """Raise the open-file soft limit to what `clients` connections need (the workers and drivers inherit
    it); PlanError when the hard limit or the local port range cannot hold them. Returns a note when the
    soft limit was raised."""
    need = clients + FD_MARGIN
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    ports = local_ports()
    if ports is not None and clients > ports:
        raise PlanError(
            f"--clients {clients}: one client address has {ports} local ports to one server address "
            f"(net.ipv4.ip_local_port_range); use at most {ports}"
        )
    if need <= soft:
        return None
    if hard != resource.RLIM_INFINITY and need > hard:
        raise PlanError(
            f"--clients {clients} needs {need} open files; the hard limit is {hard} (raise it with ulimit -Hn, "
            "as root, or in limits.conf)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    return f"raised the open-file limit from {soft} to {need} for the burst"


def run_bursts(
    server: ServerSpec, plan: BurstPlan, on_burst: Callable[[ServerSpec, int], Any] | None = None
) -> BurstRun:
    """Every burst of `plan` against one server: start it, burst, stop it."""
    plan = plan.validated()
    cells: list[BurstCell] = []

    def drive(target: Any) -> None:
        for clients in sorted(plan.clients):
            tick = on_burst(server, clients) if on_burst else None
            target.settle()  # every worker back asleep: the burst meets an idle server
            before = netstat.read_counters()
            load = drive_load(target, plan.load(clients), server.workers, tick)
            after = netstat.read_counters()
            moved = netstat.counter_deltas(before, after, netstat.WATCHED_COUNTERS) if before and after else {}
            cells.append(BurstCell.of(load, clients, {k: v for k, v in moved.items() if v}))
            if load.interruption is not None:
                raise load.interruption

    def describe() -> str:
        return f"after {len(cells)} of {len(plan.clients)} bursts"

    try:
        _, m = lifecycle(server, drive, describe)
    except KeyboardInterrupt as stop:
        if cells:
            raise RunInterrupted([BurstRun(server, tuple(cells), None, interrupted=True)], stop) from None
        raise
    return BurstRun(server, tuple(cells), m.environment)


def burst_table(
    servers: Sequence[ServerSpec], plan: BurstPlan, on_burst: Callable[[ServerSpec, int], Any] | None = None
) -> list[BurstRun]:
    return run_each(servers, lambda spec: run_bursts(spec, plan, on_burst))
