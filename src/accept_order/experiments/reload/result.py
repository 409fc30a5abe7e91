"""`reload`'s result: per mode, what a steady load lost when one worker went mid-run, and why.

Every connection driven is served or failed (by errno). The kernel's counters come from the private
network namespace the command ran in, so they are this run's alone. What the kernel promises, per mode:
- one shared queue (blocking, epoll, accept-mutex, ...): a worker that leaves closes only its own copy of
  the listener; the queue stays and the others keep accepting from it: nothing is lost. Killed, it loses
  what it had accepted and not answered ("held"), never what was queued.
- fd-pass: the acceptor stops handing to a worker that says it leaves, and the worker serves what was
  already on its way: nothing is lost. Killed, what was handed to it and not answered is lost.
- one queue per worker (reuseport): closing a listener resets the connections queued on it, unless
  net.ipv4.tcp_migrate_req=1 moves them to another listener of the group (TCPMigrateReqSuccess).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ...core.load_summary import CountedTotals
from ...core.measures import Environment, WorkerCounters
from ...core.protocol import NO_REPLY, TIMEOUT
from ...core.spec import ConcurrentLoad, ServerSpec
from ...results.evidence_shapes import EVIDENCE
from ...results.schema import Integer, ListOf, MapOf, Maybe, OneOf, SchemaError, child, derive
from ...results.shapes import SIGNED, SKIPPED, at_most_workers, workers_of

HOWS = ("leave", "kill")
MIGRATE = "TcpExtTCPMigrateReqSuccess"
MIGRATE_FAILED = "TcpExtTCPMigrateReqFailure"


@dataclass(frozen=True)
class Expectation:
    """What the kernel promises for this mode, way of going and migration setting."""

    # "none": nothing may be lost; "held": only what the worker held, which the kernel closes when it dies (the
    # client reads the end without a reply), never a reset from a queue; "any": no promise
    bound: str
    why: str


def expectation(queue: str, passes: bool, how: str, migrate: int) -> Expectation:
    """`queue`: the mode's ("shared" or "per-worker"); `passes`: an acceptor hands connections over."""
    if how == "leave":
        if passes:
            return Expectation("none", "the acceptor stops handing it connections; it serves those on their way")
        if queue == "shared":
            return Expectation("none", "it closes only its copy of the shared listener; the others keep the queue")
        if migrate:
            return Expectation("none", "tcp_migrate_req=1 moves its listener's queue to another listener")
        return Expectation("any", "closing its listener resets the connections queued on it")
    if passes:
        return Expectation("held", "what was handed to it and not answered dies with it")
    if queue == "shared":
        return Expectation("held", "only what it had accepted dies with it; the shared queue stays")
    if migrate:
        return Expectation("held", "its queue moves to another listener; what it had accepted dies with it")
    return Expectation("any", "its listener closes with it: its queue is reset, and what it had accepted")


# How long the run waits for the worker to be gone once told (a leaving worker notices between connections, so one
# nothing wakes takes all of it). The same in every file since reload began (d6c2891): files do not store it.
GONE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class ReloadRun(CountedTotals):
    """One mode under a steady load while worker `worker` went (`how`) `at_s` seconds in."""

    server: ServerSpec
    load: ConcurrentLoad
    how: str  # "leave" (graceful: closes its listener, serves what it holds, exits) or "kill" (SIGKILL)
    migrate: int  # net.ipv4.tcp_migrate_req in the run's namespace
    queue: str  # the mode's: "shared" or "per-worker"
    passes: bool  # an acceptor hands connections to the workers (fd-pass)
    worker: int
    at_s: float | None  # when it was told to go (None: the load ended first)
    gone_s: float | None  # how long it took to be gone (None: it was still there GONE_TIMEOUT_S after)
    held: int | None  # connections it had and had not answered when it was killed (None: unknown)
    served: tuple[int, ...]  # per worker, from the replies
    finished: int  # connections the load generator finished, served or failed (its own count)
    errors: dict[str, int]  # failed connections by errno name
    counters: dict[str, int]  # kernel counter deltas (moved ones only)
    worker_counters: tuple[WorkerCounters, ...]
    environment: Environment
    wall_s: float
    evidence: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False
    held_exact: bool = False  # the acceptor's count (fd-pass); else a lower bound, from the worker's own count
    client_cpu_us: float | None = None  # the load generator's own CPU per connection (0.4's files lack it)
    loop: str | None = None  # the loops it ran (core/totals.loops_ran: "io_uring"); None: files before 0.3
    # Connections the other workers accepted after the one that went was gone (their own counts), and the load's
    # time at the last look (every 0.1 s) that found their count moved since (None: it never moved). Both None
    # where it never went, or in files from before them: the whole run's counts are all those say.
    others_after: int | None = None
    others_last_s: float | None = None
    # The load's time at the first look that found their count moved after the going (None: it never moved, or a
    # file from before it), and at the last look before it that found it had not (None: there was none): whether
    # they took the queue the kill left before its connections' --timeout ran out.
    others_first_s: float | None = None
    others_still_s: float | None = None

    @property
    def expected(self) -> Expectation:
        return expectation(self.queue, self.passes, self.how, self.migrate)

    @property
    def as_expected(self) -> bool | None:
        """Whether the loss is within what the kernel promises; None where it promises nothing."""
        bound = self.expected.bound
        if bound == "none":
            return self.failed == 0
        if bound == "held":
            # What a dying worker held is closed by the kernel with a FIN (it had read nothing): the client
            # sees the end and no reply. A reset would have come from a queue, which must not happen.
            if set(self.errors) <= {NO_REPLY}:
                return True
            return None if self.waited_past_timeout else False
        return None

    @property
    def waited_past_timeout(self) -> bool:
        """A kill's only failures besides what it held are connections that waited past the clients' --timeout while
        the others kept accepting after it: the queue stayed and was served, and how long a queued connection waits
        the kernel promises nothing of. 'reload --modes epoll --how kill -w 3 -c 60 --work 2ms --timeout 150ms' read
        'lost 322: not what the kernel promises' of 293 timeouts and 29 held, the others accepting 414 after the kill
        and nothing queued at the end (load 4). Only where a look within the --timeout after the going saw them
        accepting (stalled_past_timeout: a stall from the kill times out the same way). Not known from files before
        others_first_s: as before."""
        timed_out = self.errors.get(TIMEOUT, 0)
        only_timeouts = bool(timed_out) and set(self.errors) <= {NO_REPLY, TIMEOUT}
        seen = self.others_first_s is not None and not self.stalled_past_timeout
        return only_timeouts and bool(self.others_after) and seen

    def since_gone(self, look_s: float | None) -> float | None:
        """How long after the going a look of the load's time `look_s` was (None: no such look, or it never went)."""
        if look_s is None or self.at_s is None or self.gone_s is None:
            return None
        return max(0.0, look_s - self.at_s - self.gone_s)

    @property
    def stalled_past_timeout(self) -> bool:
        """The others were first seen accepting after the going only at a look past the clients' --timeout: the
        connections queued at the kill may have timed out in a queue nobody served (io_uring's lost wakeup on a killed
        ring, ended by the clients' own new connections after their timeout: 'reload --modes io-uring --how kill -w 3
        -c 32 --work 1ms --timeout 150ms' timed out all 32 in 2 of 4 runs, epoll 1 in 1 of 4, load 3). The looks are
        0.1 s apart (a late one on a busy machine too): a --timeout under that is never found served in time, so the
        timeouts are not called a served queue's; how long the stall lasted is said by the looks either side."""
        first = self.since_gone(self.others_first_s)
        return first is not None and first > self.load.timeout_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server.to_dict(),
            "load": self.load.to_dict(),
            "how": self.how,
            "migrate": self.migrate,
            "queue": self.queue,
            "passes": self.passes,
            "worker": self.worker,
            "at_s": self.at_s,
            "gone_s": self.gone_s,
            "held": self.held,
            "held_exact": self.held_exact,
            "served": list(self.served),
            "finished": self.finished,
            "errors": dict(self.errors),
            "counters": dict(self.counters),
            "worker_counters": [c.to_dict() for c in self.worker_counters],
            "environment": asdict(self.environment),
            "wall_s": self.wall_s,
            "evidence": self.evidence,
            "interrupted": self.interrupted,
            "client_cpu_us": self.client_cpu_us,
        } | self._optional_dict()

    def _optional_dict(self) -> dict[str, Any]:
        """The loop, and the others' accepts after the going, where known (a file without them reads as before)."""
        kept: dict[str, Any] = {} if self.loop is None else {"loop": self.loop}
        if self.others_after is not None:
            kept |= {"others_after": self.others_after, "others_last_s": self.others_last_s}
            kept |= {"others_first_s": self.others_first_s, "others_still_s": self.others_still_s}
        return kept

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReloadRun:
        from ...results.typed import build

        server = build(ServerSpec, data["server"])
        if data["how"] not in HOWS:
            raise ValueError(f"'how' is {data['how']!r}, not one of {', '.join(HOWS)}")
        return cls(
            server=server,
            load=ConcurrentLoad.from_dict(data["load"]),
            how=data["how"],
            migrate=int(data["migrate"]),
            queue=str(data["queue"]),
            passes=bool(data["passes"]),
            worker=int(data["worker"]),
            at_s=data.get("at_s"),
            gone_s=data.get("gone_s"),
            held=data.get("held"),
            held_exact=bool(data.get("held_exact", False)),
            served=tuple(int(n) for n in data["served"]),
            finished=int(data["finished"]),
            errors={str(k): int(v) for k, v in data["errors"].items()},
            counters={str(k): int(v) for k, v in data["counters"].items()},
            worker_counters=tuple(build(WorkerCounters, c) for c in data.get("worker_counters", [])),
            environment=build(Environment, data["environment"]),
            wall_s=float(data["wall_s"]),
            evidence=dict(data.get("evidence", {})),
            interrupted=bool(data.get("interrupted", False)),
            client_cpu_us=data.get("client_cpu_us"),
            loop=data.get("loop"),
            others_after=data.get("others_after"),
            others_last_s=data.get("others_last_s"),
            others_first_s=data.get("others_first_s"),
            others_still_s=data.get("others_still_s"),
        )


@dataclass(frozen=True)
class ReloadResult:
    runs: tuple[ReloadRun, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    host_migrate_req: str | None = None  # the host's setting, read before and left as it was
    interrupted: bool = False  # Ctrl-C or SIGTERM ended it: the runs are those that got that far

    def to_dict(self) -> dict[str, Any]:
        doc = {
            "runs": [r.to_dict() for r in self.runs],
            "skipped": dict(self.skipped),
            "host_migrate_req": self.host_migrate_req,
        }
        return doc | ({"interrupted": True} if self.interrupted else {})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReloadResult:
        runs = data["runs"]
        if not isinstance(runs, list):
            raise TypeError("'runs' is not a list")
        return cls(
            tuple(ReloadRun.from_dict(r) for r in runs),
            dict(data.get("skipped", {})),
            data.get("host_migrate_req"),
            bool(data.get("interrupted", False)),
        )


def _worker_of_server(run: Mapping[str, Any], at: str) -> None:
    workers = workers_of(run)
    if run["worker"] >= workers:
        raise SchemaError(child(at, "worker"), f"names worker {run['worker']}, but the server had {workers}")


RELOAD_RUN = derive(
    ReloadRun,
    how=OneOf(HOWS),
    queue=OneOf(("shared", "per-worker")),
    migrate=Integer(0, 2),
    counters=MapOf(SIGNED),
    evidence=EVIDENCE,
    loop=Maybe(OneOf(("io_uring", "epoll", "epoll and io_uring"))),
    optional=("at_s", "gone_s", "held", "worker_counters", "client_cpu_us", "loop"),
    rules=(at_most_workers("served"), _worker_of_server),
)
RELOAD_SHAPE = derive(ReloadResult, runs=ListOf(RELOAD_RUN), skipped=SKIPPED)
