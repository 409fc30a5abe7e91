"""`ramp`'s result: every step of offered load, what it got, and the knee (last step held, first not)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ...core.hosts import ClientHosts, HostOutcome
from ...core.load_summary import CountedTotals, pool_fill_of, pool_of
from ...core.measures import Environment
from ...core.protocol import ABORTED
from ...core.spec import DRIVERS, ServerSpec
from ...core.text import escape_controls
from ...results.evidence_shapes import OBSERVED_ON, SHORTAGES
from ...results.host_shapes import hosts_fit_workers
from ...results.schema import (
    Flag,
    Integer,
    ListOf,
    MapOf,
    Maybe,
    Number,
    OneOf,
    Record,
    SchemaError,
    child,
    derive,
    known,
)
from ...results.shapes import NOTES, POOL, SIGNED, STOPPED, workers_of


@dataclass(frozen=True)
class RampStep(CountedTotals):
    kind: str  # "rate" (open loop, connections per second) or "concurrency" (closed loop, in flight)
    offered: float
    wall_s: float
    served: tuple[int, ...]  # per worker
    errors: dict[str, int]
    p50_us: int | None
    p99_us: int | None
    p999_us: int | None
    max_us: int | None
    counters: dict[str, int]  # kernel counters that moved during the step (nstat -z style deltas)
    sockets: dict[str, int]  # TCP sockets per state at the end of the step (ss -s style)
    queues: tuple[int, ...]  # the listeners' longest accept queues (Recv-Q) seen during the step
    worker_cpu: tuple[float, ...]  # each worker's CPU, as a share of the step
    driver_cpu: float  # the busiest load generator process's CPU share
    machine_cpu: float | None = None  # all CPUs' busy share over the step (/proc/stat): host-wide
    client_cpu_us: float | None = None  # the load generator's own CPU per connection (0.4's files lack it)
    loop: str | None = None  # the loops it ran (core/totals.loops_ran: "io_uring"); None: files before 0.3
    reasons: tuple[str, ...] = ()  # why it did not hold; empty: it held
    seen: tuple[str, ...] = ()  # what the kernel and the CPU counters saw
    interrupted: bool = False
    # Kept connections (the plan's requests_per_connection != 1 or a pool; `served` then counts requests):
    # the connections each worker accepted (as their first replies say) and a pool's (opened, planned) size
    # and the seconds it took to fill before the step's time (`wall_s`) began (None in older files, whose
    # wall_s holds it); empty, and not in the file, otherwise
    connections: tuple[int, ...] = ()
    pool: tuple[int, int] | None = None
    pool_fill_s: float | None = None
    hosts: tuple[HostOutcome, ...] = ()  # --clients: what each client host drove of this step
    # --observe-on: what observe saw on the server's host during this step, beside its replies' counts (plain
    # data, as a latency run's evidence holds it: experiments/observe/remote.py `joined`)
    observed_on: tuple[dict[str, Any], ...] = ()
    # --clients at a --target whose address is this host's own (servers/remote.py on_this_host): the load came
    # here, so this host's counters and CPUs are the server's host's, not a coordinator's (in the file if so)
    through_here: bool = False
    # The handshake packets the server's own listeners dropped over the step (their sk_drops, read over netlink:
    # a full accept queue, mostly), where ListenOverflows in `counters` is every listener's of the namespace; None
    # where not read (a server elsewhere, files from before: not in the file then)
    listener_drops: int | None = None
    # A --target elsewhere (none of this machine's network namespaces) driven from here, or in one whose processes
    # were all gone by the step's end: `counters` are left empty, this host's being the client's, not the server's
    # (run.py _counters_reader); the listen counters are --observe-on's where it brought them
    server_unread: bool = False
    # A --target's connections whose replies named no worker (a stock page: loads/reply_keys.py): served, on no
    # row of `served` (in the file where any)
    unnamed: int = 0
    # `counters` read in the --target's network namespace, another of this machine's than the sockets' (ours, the
    # client's): said so, not 'both host-wide' (report._whose)
    counters_netns: bool = False
    # How long this tool's cgroup was held off the CPUs by its CPU limit over the step (core/cgroup_cpu.py), in ms,
    # and that limit: a wait of the run's own cap, not other processes'. None (not in the file): no limit over it
    throttled_ms: float | None = None
    cpu_limit: str | None = None

    @property
    def ok(self) -> int:
        """Served: the rows' and the replies' that named no worker."""
        return sum(self.served) + self.unnamed

    @property
    def held(self) -> bool:
        return not self.reasons and not self.interrupted

    @property
    def cut_short(self) -> bool:
        """Ctrl-C stopped it before it showed a reason not to hold: it neither held nor broke (not a knee)."""
        return self.interrupted and not self.reasons

    @property
    def under_way(self) -> int:
        """The connections a stop (Ctrl-C, SIGTERM) found under way in a step it cut short: counted as aborted by
        the load, the stop's and not the server's failures (judge leaves them out too)."""
        return self.errors.get(ABORTED, 0) if self.interrupted else 0

    @property
    def offered_reported(self) -> float:
        """The rate offered to the client hosts whose connections are in the figures: one lost mid-step drove its
        share (the rate is split evenly over the hosts the step was split over: loads/hosts/split.py) into no count
        here; one not reached for the step had no share (the others drove the whole). Every host lost: the whole."""
        shared = [h for h in self.hosts if h.had_share]
        lost = sum(h.lost is not None for h in shared)
        return self.offered * (len(shared) - lost) / len(shared) if 0 < lost < len(shared) else self.offered

    @property
    def lost_hosts(self) -> str:
        """The hosts lost mid-step, whose share of the rate is in no count here."""
        return ", ".join(escape_controls(h.destination) for h in self.hosts if h.lost is not None and h.had_share)

    @property
    def server_counters(self) -> dict[str, int] | None:
        """The listen counters --observe-on read in the server's own network namespace over the step, added
        over the hosts observed; None where nothing brought them (no --observe-on, or a file from before)."""
        seen = [o["counters"] for o in self.observed_on if isinstance(o.get("counters"), Mapping)]
        if not seen:
            return None
        added: dict[str, int] = {}
        for counters in seen:
            for name, n in counters.items():
                added[name] = added.get(name, 0) + int(n)
        return added

    def judged(self, reasons: list[str], seen: list[str]) -> RampStep:
        return dataclasses.replace(self, reasons=tuple(reasons), seen=tuple(seen))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("served", "queues", "worker_cpu", "reasons", "seen", "connections", "observed_on"):
            data[name] = list(data[name])
        for name in ("connections", "observed_on"):  # one request per connection, no --observe-on: as before
            if not data[name]:
                del data[name]
        del data["pool"], data["pool_fill_s"], data["hosts"]
        if self.loop is None:
            del data["loop"]
        if not self.through_here:  # files without it read as before
            del data["through_here"]
        if self.listener_drops is None:
            del data["listener_drops"]
        if not self.server_unread:  # files without it read as before
            del data["server_unread"]
        if not self.counters_netns:
            del data["counters_netns"]
        if not self.unnamed:  # files without it read as before
            del data["unnamed"]
        if self.throttled_ms is None:  # no CPU limit over the tool: as before
            del data["throttled_ms"], data["cpu_limit"]
        if self.hosts:
            data["hosts"] = [h.to_dict() for h in self.hosts]
        if self.pool is not None:  # as a latency run's file holds it
            data["pool"] = {"opened": self.pool[0], "planned": self.pool[1]}
            if self.pool_fill_s is not None:
                data["pool"]["fill_s"] = self.pool_fill_s
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RampStep:
        from ...results.typed import build, hosts_of

        values = dict(data)
        for name in ("served", "queues", "worker_cpu", "reasons", "seen", "connections", "observed_on"):
            values[name] = tuple(values.get(name, ()))
        pool = {"pool": values.pop("pool", None)}
        hosts = hosts_of(values)  # checked, then built apart: build() would keep the dicts
        step: RampStep = build(cls, values)
        step = dataclasses.replace(step, hosts=hosts)
        return dataclasses.replace(step, pool=pool_of(pool), pool_fill_s=pool_fill_of(pool)) if pool["pool"] else step


@dataclass(frozen=True)
class RampResult:
    server: ServerSpec
    plan: dict[str, Any]
    steps: tuple[RampStep, ...]
    environment: Environment | None
    interrupted: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    shortages: tuple[dict[str, Any], ...] = ()  # what a launched server logged running out of (evidence)
    # Over kept connections: the requests each worker says it answered over all the steps (its own count,
    # beside the replies'); empty otherwise, or when a worker does not count them
    worker_requests: tuple[int, ...] = ()
    # An error ended the ramp after some steps (a client host lost, a driver that could not start): why. The
    # steps are those measured before it; the ones after were not run.
    stopped: str | None = None
    # A --target whose kernel counters were read in the namespace a connection made to it before the load landed
    # in (two of this machine's hold its address, or NAT sent it on): how, as evidence.counters_landed says
    counters_landed: str | None = None

    @property
    def knee(self) -> tuple[RampStep | None, RampStep | None]:
        """(last step that held before the first that did not, that first one); (last, None) if all held, or
        if Ctrl-C cut a step short before it showed a reason not to hold: that step says nothing of the knee."""
        last: RampStep | None = None
        for step in self.steps:
            if not step.held:
                return (last, None) if step.cut_short else (last, step)
            last = step
        return last, None

    @property
    def cut_short(self) -> bool:
        """Ctrl-C ended the ramp before it broke and before its last step: where it would have broken is not
        known. The signal cut a step short, or came between two steps (the run keeps the steps it finished,
        each held, and the later ones never ran); after the last step, every step ran and the ramp is whole."""
        if self.knee[1] is not None:
            return False
        planned = self.plan.get("rates") or self.plan.get("concurrencies") or ()
        return any(s.cut_short for s in self.steps) or (self.interrupted and len(self.steps) < len(planned))

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server.to_dict(),
            "plan": dict(self.plan),
            "steps": [s.to_dict() for s in self.steps],
            "environment": asdict(self.environment) if self.environment else None,
            "interrupted": self.interrupted,
            **({"shortages": [dict(s) for s in self.shortages]} if self.shortages else {}),
            **({"worker_requests": list(self.worker_requests)} if self.worker_requests else {}),
            **({"stopped": self.stopped} if self.stopped else {}),
            **({"counters_landed": self.counters_landed} if self.counters_landed else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RampResult:
        from ...results.typed import build

        env = data.get("environment")
        steps = data["steps"]
        if not isinstance(steps, list):
            raise TypeError("'steps' is not a list")
        return cls(
            server=build(ServerSpec, data["server"]),
            plan=dict(data.get("plan", {})),
            steps=tuple(RampStep.from_dict(s) for s in steps),
            environment=build(Environment, env) if env else None,
            interrupted=bool(data.get("interrupted", False)),
            shortages=tuple(dict(s) for s in data.get("shortages", []) if isinstance(s, Mapping)),
            worker_requests=tuple(int(n) for n in data.get("worker_requests", ())),
            stopped=data.get("stopped"),
            counters_landed=data.get("counters_landed"),
        )


def _steps_fit_workers(ramp: Mapping[str, Any], at: str) -> None:
    workers = workers_of(ramp)
    if len(ramp.get("worker_requests", [])) > workers:
        raise SchemaError(child(at, "worker_requests"), f"has more entries than the server's {workers} workers")
    for index, step in enumerate(ramp["steps"]):
        for name in ("served", "worker_cpu", "connections"):
            if len(step.get(name, [])) > workers:
                where = child(child(child(at, "steps"), index), name)
                raise SchemaError(where, f"has {len(step[name])} entries, one per worker, but the server had {workers}")
        hosts_fit_workers({**step, "server": ramp.get("server", {})}, child(child(at, "steps"), index))


# run.RampPlan as plan_dict saves it (every field optional: the report reads what is there)
_PLAN = Record(
    {
        "rates": ListOf(Number()),
        "concurrencies": ListOf(Integer()),
        "step_s": Number(),
        "in_flight": Integer(),
        "p99_ms": Maybe(Number()),
        "p999_ms": Maybe(Number()),
        "max_errors": Integer(),
        "driver_procs": Integer(),
        "timeout_s": Number(),
        "keep_going": Flag(),
        "load_cpus": ListOf(Integer(0, 1 << 20)),  # 0.4's files lack it
        "requests_per_connection": Integer(),  # a ramp over kept connections only
        "pool": Flag(),
        "client_hosts": Maybe(derive(ClientHosts)),  # --clients: the hosts every step ran on (run.RampPlan)
        "driver": OneOf(DRIVERS),  # --driver other than auto
    }
)
_STEP = known(  # registered: RampStep.from_dict builds with it too
    RampStep,
    derive(
        RampStep,
        kind=OneOf(("rate", "concurrency")),
        counters=MapOf(SIGNED),
        pool=POOL,
        observed_on=ListOf(OBSERVED_ON),
        loop=Maybe(OneOf(("io_uring", "epoll", "epoll and io_uring"))),
        omit=("pool_fill_s",),  # saved in `pool`
        optional=("served", "queues", "worker_cpu", "reasons", "seen", "loop"),
    ),
)
RAMP_SHAPE = derive(
    RampResult,
    plan=_PLAN,
    steps=ListOf(_STEP),
    shortages=SHORTAGES,
    notes=NOTES,
    stopped=STOPPED,
    optional=("plan", "environment"),
    rules=(_steps_fit_workers,),
)
