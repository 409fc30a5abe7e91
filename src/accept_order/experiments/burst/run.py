"""The burst experiment (seed 004's table): N clients connect at once; how long until every one is served?

One server per (server, mode), started once through lifecycle.py's lifecycle; against it, one burst per client
count, smallest first, each a closed loop whose every slot makes exactly one connection (so all N connects
go out at once, split over the driver processes). Per burst: the time from the first connect to the last
reply, the failures by errno, the spread over workers, and the kernel's overflow counters around it.

The client side must not be the bottleneck: the drivers' own CPU and run-queue wait are kept, and a burst
whose drivers were CPU-bound or starved says so. Limits are checked before anything starts: open files
and local ports. Each process has its own descriptor table, so a driver needs only its share of a burst's
connections: the soft limit is raised to what the largest burst needs (the hard limit too, as root, up to
fs.nr_open), and a burst whose share per driver does not fit under it is spread over more drivers.
"""

from __future__ import annotations

import dataclasses
import resource
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...core import environment
from ...core.capabilities import RESOURCE, holds, what_would_let_it
from ...core.errors import AcceptOrderError, PlanError
from ...core.hosts import ClientHosts
from ...core.signals import deferred
from ...core.spec import (
    FD_MARGIN,
    MAX_CONNECTIONS,
    MAX_DRIVER_PROCS,
    ConcurrentLoad,
    Driver,
    ServerSpec,
    check_driver,
    check_range,
    drivers_under,
    local_ports,
    sized,
)
from ...probes import netstat
from ...probes.listen_drops import dropped_between
from ...probes.listeners import drops_reading
from ...servers.registry import elsewhere
from ..lifecycle import Measured, as_answered, lifecycle
from ..session import RunInterrupted, RunStopped, drive_load, run_each
from .result import BurstCell, BurstRun

MAX_CLIENTS = 1_000_000
NR_OPEN = "/proc/sys/fs/nr_open"  # the most a hard RLIMIT_NOFILE can be raised to, even by root


@dataclass(frozen=True)
class BurstPlan:
    clients: tuple[int, ...] = (1000, 3000, 5000)
    driver_procs: int = 2
    timeout_s: float = 10.0
    load_cpus: tuple[int, ...] = ()  # the load generator's processes pinned to these CPUs (--load-cpus)
    # Requests per connection, K (1: connect, reply, close): the burst sends clients × K requests over
    # connections opened all at once, at most K each; the requests are shared, so a connection whose K were
    # answered first is followed by a new one while requests are left (more connections than clients, whose
    # requests add up to clients × K: some then carry fewer). The burst ends when the busiest worker has
    # answered what it holds. Not 0
    # (a connection kept for the whole run has no end of its own, and a burst ends when every client is
    # served) and no pool (a pool opens its connections one after another at idle, a burst all at once).
    requests_per_connection: int = 1
    client_hosts: ClientHosts | None = None  # --client-hosts: each burst is split across them (loads/hosts/)
    driver: Driver = "auto"  # the load generator's loop (loads/drivers.py)

    def validated(self) -> BurstPlan:
        if not self.clients:
            raise PlanError("--clients needs at least one count")
        if self.requests_per_connection == 0:
            raise PlanError(
                "burst takes no --requests-per-connection 0: a burst ends when every client has its answers, "
                "and a connection kept for the whole run has no end of its own (give K > 0)"
            )
        check_range("--requests-per-connection", self.requests_per_connection, 1, MAX_CONNECTIONS)
        for n in self.clients:
            check_range("--clients", n, 1, MAX_CLIENTS)
        hosts = len(self.client_hosts.destinations) if self.client_hosts else 1
        if min(self.clients) < hosts:  # else loads/hosts/split.py's line names --concurrency, which burst has not
            raise PlanError(
                f"--clients {min(self.clients)} over {hosts} --client-hosts: give each burst at least "
                "one client per host"
            )
        check_range("--driver-procs", self.driver_procs, 1, MAX_DRIVER_PROCS)
        check_range("--timeout", self.timeout_s, 0.001, 3600, "s")
        check_driver(self.driver)
        return self

    def load(self, clients: int) -> ConcurrentLoad:
        """A burst as a closed loop: as many slots as connections, so each slot connects once, at once;
        over more drivers than asked when one driver's share would not fit under the open-file limit. With K
        requests per connection the load counts the clients' K requests each (loads/kept.py)."""
        # client hosts: --driver-procs is each host's, under its own limit (loads/hosts/load_side.py)
        procs = min(self.driver_procs if self.client_hosts else drivers_for(clients, self.driver_procs), clients)
        per = self.requests_per_connection
        return ConcurrentLoad(
            connections=clients * per,
            concurrency=clients,
            driver_procs=procs,
            timeout_s=self.timeout_s,
            cpus=self.load_cpus,
            requests_per_connection=per,
            clients=self.client_hosts,
            driver=self.driver,
        )

    @property
    def keeps_connections(self) -> bool:
        return self.requests_per_connection != 1


def drivers_for(clients: int, asked: int, limit: int | None = None) -> int:
    """Driver processes for a burst of `clients`: `asked`, or as many more as it takes for each one's share
    of the connections (and FD_MARGIN of its own files) to fit under the open-file soft limit."""
    return drivers_under(clients, asked, resource.getrlimit(resource.RLIMIT_NOFILE)[0] if limit is None else limit)


def _raise_hard_limit(need: int, soft: int, hard: int) -> int:
    """As root (CAP_SYS_RESOURCE), raise the open-file hard limit to `need`, at most fs.nr_open; the hard
    limit it is now (unchanged when not allowed)."""
    try:
        with open(NR_OPEN) as f:
            need = min(need, int(f.read()))
    except (OSError, ValueError):
        pass
    if need <= hard:
        return hard
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, need))
    except (OSError, ValueError):  # not root: the burst is spread over more drivers instead
        return hard
    return need


def _how_to_raise() -> str:
    """Who may raise the open-file hard limit: ulimit -Hn needs CAP_SYS_RESOURCE, which root too may lack (a
    container's); a process holding it was stopped by fs.nr_open (_raise_hard_limit went as far as that)."""
    if holds(RESOURCE):
        return "fs.nr_open caps it: raise that first"
    return f"raise it in limits.conf, or with ulimit -Hn, which needs CAP_SYS_RESOURCE: {what_would_let_it(RESOURCE)}"


def make_room(clients: int, driver_procs: int = 1, on_hosts: bool = False) -> str | None:
    """Make room for a burst of `clients` before any process starts (the workers and drivers inherit the
    limits): the open-file soft limit raised to what the whole burst needs (a worker that accepts until
    EAGAIN can hold all of it), the hard limit first when it is lower and we may (root). Whatever the hard
    limit stays, the drivers' share must fit: the burst then goes over more driver processes
    (BurstPlan.load), PlanError when even MAX_DRIVER_PROCS cannot hold it or the local port range is too
    small. Returns a note saying what was raised or spread. `on_hosts`: client hosts drive the burst (each
    makes room for its share: loads/hosts/load_side.py), so this host's ports and drivers are not the limit;
    only its workers, which may hold the whole burst, need the open files."""
    need = clients + FD_MARGIN
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    ports = None if on_hosts else local_ports()
    if ports is not None and clients > ports:
        raise PlanError(
            f"--clients {clients}: one client address has {ports} local ports to one server address "
            f"(net.ipv4.ip_local_port_range); use at most {ports}"
        )
    if need <= soft:
        return None
    notes = []
    if hard != resource.RLIM_INFINITY and need > hard:
        raised = _raise_hard_limit(need, soft, hard)
        if raised > hard:
            notes.append(f"raised the open-file hard limit from {hard} to {raised}")
        hard = raised
    new_soft = need if hard == resource.RLIM_INFINITY else min(need, hard)
    drivers = driver_procs if on_hosts else drivers_for(clients, driver_procs, new_soft)
    if drivers > MAX_DRIVER_PROCS:
        raise PlanError(
            f"--clients {clients} needs {need} open files; the hard limit is {hard}, and even "
            f"{MAX_DRIVER_PROCS} driver processes cannot share the connections under it ({_how_to_raise()})"
        )
    if new_soft > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
        notes.append(f"raised the open-file limit from {soft} to {new_soft}")
    if drivers > driver_procs:
        notes.append(
            f"the burst of {clients} goes over {drivers} driver processes, not {driver_procs}: each holds at most "
            f"{new_soft - FD_MARGIN} connections under the open-file limit of {new_soft}"
        )
    return "; ".join(notes) + " for the burst" if notes else None


def run_bursts(
    server: ServerSpec, plan: BurstPlan, on_burst: Callable[[ServerSpec, int], Any] | None = None
) -> BurstRun:
    """Every burst of `plan` against one server: start it, burst, stop it. Ctrl-C or SIGTERM after a burst:
    RunInterrupted with the bursts so far; an error after one (a client host lost, a driver that could not
    start, a worker that died): RunStopped with them."""
    plan = plan.validated()
    cells: list[BurstCell] = []
    per = plan.requests_per_connection

    def drive(target: Any) -> None:
        for clients in sorted(plan.clients):
            tick = on_burst(server, clients) if on_burst else None
            target.settle()  # every worker back asleep: the burst meets an idle server
            remote = elsewhere(target)
            # a --target in one of this machine's network namespaces is read there; elsewhere, ours are the client's
            hosts = plan.load(clients).clients  # from client hosts: ours, a coordinator's, said so (report.py)
            from_here = remote is not None and not (hosts and hosts.destinations)
            theirs = remote.counters_reader() if remote is not None and from_here else None
            read = netstat.or_empty(theirs) if theirs else netstat.read_counters  # {}: its processes gone
            server_read = remote is None or theirs is not None
            before = read()
            port = target.address[1] if remote is None else 0  # a server here: its listeners' drops
            drops_before = drops_reading(port, server.host, target.pids) if port else None
            load = drive_load(target, plan.load(clients), server.workers, tick)
            # The burst has finished: a signal while its counters are read must not lose it. It is raised
            # once the cell is kept (the run then ends with the bursts so far).
            with deferred():
                after = read()
                moved = netstat.counter_deltas(before, after, netstat.WATCHED_COUNTERS) if before and after else {}
                # with --client-hosts: a coordinator's, said so
                unread = not (server_read and before and after) and not load.hosts
                moved = {} if unread else moved
                cell = BurstCell.of(load, clients, {k: v for k, v in moved.items() if v}, per)
                cell = dataclasses.replace(cell, server_unread=unread)
                drops_after = drops_reading(port, server.host, target.pids) if port else None
                cell = dataclasses.replace(cell, listener_drops=dropped_between(drops_before, drops_after))
                # at this host's own address, the burst came here (on_this_host)
                here = bool(cell.hosts) and remote is not None and remote.through_here
                cells.append(dataclasses.replace(cell, through_here=True) if here else cell)
            if load.interruption is not None:
                raise load.interruption

    def describe() -> str:
        return f"after {len(cells)} of {len(plan.clients)} bursts"

    def build(_: None, m: Measured) -> BurstRun:
        # Over kept connections, the requests each worker says it answered over all its bursts: the witness
        # of the replies' count (None where a worker does not count them: a launched server's)
        own = tuple(c.requests for c in sorted(m.counters, key=lambda c: c.index) if c.requests is not None)
        own = own if plan.keeps_connections and len(own) == len(m.counters) else ()
        return BurstRun(
            as_answered(server, len(m.pids)),
            tuple(cells),
            m.environment,
            shortages=tuple(m.evidence.get("shortages", ())),
            worker_requests=own,
            counters_landed=m.evidence.get("counters_landed"),
        )

    started = environment.current()  # for bursts a signal or an error keeps: the machine they ran on
    try:
        return lifecycle(sized(server, max(plan.clients), plan.keeps_connections), drive, describe, build)
    except RunInterrupted:
        raise  # after the last burst: the whole result travels with it
    except KeyboardInterrupt as stop:
        if cells:
            answered = as_answered(server, max(len(c.served) for c in cells))
            raise RunInterrupted([BurstRun(answered, tuple(cells), started, interrupted=True)], stop) from None
        raise
    except AcceptOrderError as error:
        if cells:  # the bursts before the one that failed are whole: kept, and the error said after them
            answered = as_answered(server, max(len(c.served) for c in cells))
            cut = BurstRun(answered, tuple(cells), started, stopped=str(error))  # marked: not a whole run
            raise RunStopped([cut], error) from error
        raise


def burst_table(
    servers: Sequence[ServerSpec], plan: BurstPlan, on_burst: Callable[[ServerSpec, int], Any] | None = None
) -> list[BurstRun]:
    return run_each(servers, lambda spec: run_bursts(spec, plan, on_burst), keep_on_error=True)
