"""A server on another host (or in another network namespace), known only by its address: --target.

Nothing about its processes can be seen from here, so a connection is attributed by the reply alone
("worker I pid P" from a built-in `serve`, "worker PID" from the tool's nginx handler). `run`'s one client
process learns worker indices as the replies come (LearnedAttribution): the index a reply names, or, for a
reply that names only a pid, the order in which pids first answered. A load's several driver processes
count by reply key instead, and the parent places the keys on indices after each load (loads/reply_keys.py):
the same index for the same worker in every process and over the run's loads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import NotServing, PlanError
from ..core.kinds import ModeInfo, ServerKind
from ..core.protocol import HTTP, LINE, ClientProtocol, describe_error
from ..core.spec import REMOTE_KIND, ServerSpec
from ..core.started import Closing

# The counters and the attributions are imported where a server elsewhere is made: not at start-up (issue 30).
if TYPE_CHECKING:
    from ..core.cures import LongLivedCure
    from ..core.measures import ConnectionRecord, WorkerCounters
    from ..core.target import Target
    from ..loads.reply_keys import ReplyWorkers
    from ..probes.address_netns import Located
    from .remote_learned import LearnedAttribution

# Said once in every load's report of a server elsewhere: what this host cannot measure of it.
UNSEEN = (
    "{label}: a server elsewhere, its workers known by their replies only (each by the pid it named; -w is "
    "the least there are, and more that answered are added). Missing, as its processes cannot be seen from "
    "here: the workers' CPU and own counts, the kernel's accepts per worker and the listeners' queues, "
    "observe's evidence (--observe-on runs observe on its host), and the model check and whether the client's "
    "CPU set the pace (both need their CPU); the kernel counters are read in the server's network namespace "
    "where it is one of this machine's (where two hold its address, the one this host's route goes straight into "
    "over a veth, or else, and where NAT may send this host's on, the one where a connection made before the load, "
    "sending nothing, landed), and not read where it is elsewhere (with --clients, this host's are shown as a "
    "coordinator's)."
)

# How a connection fails where nothing listens, or nothing can be reached: no answer ever came from there.
UNREACHED = frozenset({"ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EHOSTDOWN"})

WHY = (
    "a server on another host, known only by its address: the pattern is read from the replies, which "
    "name the worker that served each connection"
)


# The same where observe ran on the server's host (--observe-on) and brought home what it can read there.
UNSEEN_OBSERVED = (
    "{label}: a server elsewhere, its workers known by their replies only (each by the pid it named; -w is "
    "the least there are, and more that answered are added). observe on its host (--observe-on, below) counted "
    "each worker's accepts and CPU and the server's listen counters; still missing, as its processes cannot be "
    "seen from here: the workers' own counts and the listeners' queues, and the model check and whether the "
    "client's CPU set the pace; the kernel counters are read in the server's network namespace where it is one "
    "of this machine's (where two hold its address, the one this host's route goes straight into over a veth, or "
    "else, and where NAT may send this host's on, the one where a connection made before the load, sending "
    "nothing, landed), and not read where it is elsewhere (with --clients, this host's are shown as a "
    "coordinator's)."
)


# Said where the server's kernel counters could not be read: this host's are the client's, not the server's
ELSEWHERE_UNREAD = (
    "the server is elsewhere (its address is none of this machine's network namespaces'); --observe-on HOST reads "
    "its listen counters on its host"
)


def on_this_host(host: str) -> bool:
    """The address is one of this network namespace's own (an interface holds it), loopback aside: client hosts
    (--clients) that connect to it come to this host, so the server is here and this host's kernel counters and
    CPUs are its own. A loopback address is each client host's own; a name is resolved as the loads resolve it."""
    import ipaddress
    import socket

    import psutil

    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
        wanted = {ipaddress.ip_address(a.split("%")[0]) for a in found}
    except (OSError, ValueError):
        return False
    mine = set()
    for addresses in psutil.net_if_addrs().values():
        for a in addresses:
            if a.family in (socket.AF_INET, socket.AF_INET6):
                mine.add(ipaddress.ip_address(a.address.split("%")[0]))
    return any(not w.is_loopback and w in mine for w in wanted)


def unseen_note(spec: ServerSpec, observed: bool = False) -> str | None:
    """What a report of a load at a server elsewhere says it could not measure (less what --observe-on brought
    from the server's host, where `observed`); None for any other server."""
    if spec.kind != RemoteKind.name:
        return None
    return (UNSEEN_OBSERVED if observed else UNSEEN).format(label=RemoteKind().label(spec))


class RemoteServer(Closing):
    def __init__(self, spec: ServerSpec) -> None:
        if spec.port == 0:
            raise PlanError("--target needs HOST:PORT")
        from ..loads.reply_keys import ReplyWorkers
        from .remote_learned import LearnedAttribution

        self.spec = spec
        self._attribution = LearnedAttribution(spec.workers)
        self._by_reply = ReplyWorkers(spec.workers)
        self._reached = False  # a load of this run has had an answer
        self._driven_from_hosts = False  # a load ran on client hosts (--clients): none of its traffic was here
        self._here: bool | None = None  # its address is this host's own (on_this_host), read once
        self._located: Located | None = None  # which of this machine's network namespaces serves it, read once

    @property
    def address(self) -> tuple[str, int]:
        return (self.spec.host, self.spec.port)

    @property
    def pids(self) -> list[int]:
        """As the replies named them (0: an index no reply named): a load's placed ones, else run's learned
        ones, which grow as workers answer (a command drives one kind of load or the other)."""
        return self._by_reply.pids if self._by_reply.keys else self._attribution.pids

    @property
    def attribution(self) -> LearnedAttribution:
        """For one client process (run): indices learned as the replies come."""
        return self._attribution

    @property
    def by_reply(self) -> ReplyWorkers:
        """For a load's driver processes: reply keys, placed on indices after each load."""
        return self._by_reply

    @property
    def protocol(self) -> ClientProtocol:
        return HTTP if self.spec.protocol == "http" else LINE

    @property
    def unsettled(self) -> int:
        return 0

    def death_fds(self) -> list[int]:
        return []

    def reached(self, served: int, errors: Mapping[str, int]) -> None:
        """After a load: NotServing (one line, exit 1) when no load of the run has had an answer yet and this
        one's every connection was refused or found no route: nobody serves at that address. A server that
        answered before and then went (a later step all refused) is a measurement, kept with its failures."""
        self._reached = self._reached or served > 0
        if self._reached or not errors or not set(errors) <= UNREACHED:
            return
        why = ", ".join(f"{n} × {describe_error(name)}" for name, n in sorted(errors.items(), key=lambda kv: -kv[1]))
        raise NotServing(f"--target {self.spec.host}:{self.spec.port}: nothing answers there ({why})")

    def reached_by(self, records: Sequence[ConnectionRecord]) -> Sequence[ConnectionRecord]:
        """reached() for run's connections one after another (each record's error: 'NAME: words'); the records
        when something answered. `run --target` of an address nobody listens on reported 'Verdict: nothing
        served' and exited 0 where latency, burst, ramp and sweep said it in one line, exit 1."""
        errors = Counter((r.error or "").split(":", 1)[0] for r in records if r.error is not None)
        self.reached(sum(r.served for r in records), errors)
        return records

    def start(self) -> None:
        """Nothing to start: the server runs elsewhere."""

    def settle(self) -> None:
        """Nothing to see: a remote worker's state is not visible from here."""

    def check_alive(self) -> None:
        """A remote server's death shows as failed connections."""

    def stop(self) -> list[WorkerCounters]:
        from ..core.measures import WorkerCounters

        return [WorkerCounters(i, pid, None, None, None, None, None, None, None, ()) for i, pid in enumerate(self.pids)]

    def check_stopped(self) -> None:
        pass

    def driven_from_hosts(self) -> None:
        """A load of the run ran on client hosts (--clients): none of its connections crossed this host, whose
        kernel counters then say nothing of the run (own_evidence says so, and the report with it), unless the
        address is this host's own (through_here)."""
        self._driven_from_hosts = True

    @property
    def through_here(self) -> bool:
        """The address is one of this host's (on_this_host): a load from client hosts came to this host, whose
        counters and CPUs are then the server's, as with a server launched here."""
        if self._here is None:
            self._here = on_this_host(self.spec.host)
        return self._here

    @property
    def located(self) -> Located:
        """Which network namespace of this machine serves the address (probes/address_netns.py): this tool's, another
        whose processes this tool sees (a container, `ip netns`), or none (another machine)."""
        if self._located is None:
            from ..probes.address_netns import locate

            self._located = locate(self.spec.host, self.spec.port)
        return self._located

    def counters_reader(self) -> Callable[[], Mapping[str, int]] | None:
        """How the kernel counters of the server's network namespace are read around a load from this host: ours
        where the address is this namespace's own, another namespace's through its processes' /proc/PID/net files;
        None where the server is elsewhere, whose counters this host cannot read (this host's are the client's)."""
        from ..probes import netstat

        where = self.located
        if where.ours:
            return netstat.read_counters
        if where.namespace is None:
            return None
        from ..probes.server_netns import netstat_in, netstat_snmp_of

        namespace, pids = where.namespace, list(where.pids)
        return lambda: netstat_in(namespace, pids, netstat_snmp_of)

    @property
    def from_hosts(self) -> bool:
        """A load of the run went from client hosts (--clients): this host's counters are then a coordinator's."""
        return self._driven_from_hosts

    def unread_counters(self) -> str | None:
        """Why the server's counters were not read over a load driven from this host (not client hosts, whose
        coordinator's counters are labelled as such): None where they were (counters_reader)."""
        if self._driven_from_hosts or self.counters_reader() is not None:
            return None
        if self.located.why is not None:  # not elsewhere: this machine's, but where its connections go is not known
            return self.located.why
        return ELSEWHERE_UNREAD

    def own_evidence(self) -> dict[str, Any]:
        # nothing of the server is visible from here; with --clients, nothing of the load either (unless the
        # clients came to this host's own address: then its counters are the server's)
        coordinated = self._driven_from_hosts and not self.through_here
        evidence: dict[str, Any] = {"traffic_elsewhere": True} if coordinated else {}
        told = None if self._driven_from_hosts or self._located is None else self._located.told
        if told is not None:  # which namespace's counters: where its connections land (DNAT), ours too, and that
            evidence["counters_landed"] = told  # one more connection was made, which the server counted
        # how the rows were numbered, by which merge tells which row of another file is the same worker
        rows_by = self._by_reply.rows_by if self._by_reply.keys else self._attribution.rows_by
        if rows_by is not None:
            evidence["rows_by"] = rows_by
        return evidence

    def close(self) -> None:
        pass


class RemoteKind(ServerKind):
    name = REMOTE_KIND
    mode_name = REMOTE_KIND  # its one mode
    summary = "a server on another host, known only by its address"
    launched = False
    # its workers' switches cannot be read from here (their table's sleeps are '-'): no legend says whose they are
    sleeps = None

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ..core.cures import LongLivedCure

        return (
            LongLivedCure(
                None,
                "a server on another host, known by its address only: the rows of the kind it is apply (inspect it "
                "on its host)",
                "not measured: the tool cannot start it to set its settings side by side; a pool load at its address "
                "(latency --target HOST:PORT --pool) shows its split as it stands",
            ),
        )

    def label(self, spec: ServerSpec) -> str:
        return f"target {spec.host}:{spec.port}"

    def modes(self) -> dict[str, ModeInfo]:
        return {self.mode_name: ModeInfo(self.mode_name, self.summary, WHY, None, "unknown")}

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.port == 0:
            raise PlanError("--target needs HOST:PORT")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return RemoteServer(spec)
