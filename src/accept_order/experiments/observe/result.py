"""`observe`'s result: per worker what it accepted of a running server's own traffic, the share over time,
the listen queue's depth, and the mechanism when it is known. The same type is what the live view gets
every interval (a result so far) and what the command saves."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ...core.handoff import HandOffRead
from ...core.measures import Environment
from ...results.schema import ListOf, MapOf, SchemaError, child, derive, known
from ...results.shapes import PORT, SIGNED
from .. import INSPECT_KIND


@dataclass(frozen=True)
class ObservedMechanism:
    """How the server hands out connections, in the tool's mode vocabulary, as `inspect` names it."""

    name: str  # e.g. "epoll", "reuseport", "accept-mutex"
    why: str  # what it predicts and why, in the words the verdicts use
    modes: tuple[str, ...] = ()  # the server kind's own modes that look like it (nginx's "epoll", ...)
    unseen: tuple[str, ...] = ()  # what /proc cannot show that could change the answer
    source: str = INSPECT_KIND  # the experiment that named it
    elsewhere: tuple[str, ...] = ()  # the ports served by another mechanism (inspect's MechanismView.elsewhere)


@dataclass(frozen=True)
class ObservedWorker:
    """One worker (a process, or a thread of a threaded server) over the whole observation."""

    index: int
    pid: int
    tid: int | None  # a thread of a threaded server; None: the whole process
    accepts: int | None  # accepts that returned a connection (the kernel's count); None: not traced
    empty: int | None  # accepts that came back empty (EAGAIN); None: not traced
    seen: int | None  # not traced: connections seen held by it, sampled (approximate); None otherwise
    cpu_s: float | None  # CPU time used while observed; None: gone before the first reading
    voluntary_switches: int | None
    involuntary_switches: int | None
    exited_s: float | None = None  # seconds into the observation when it was found gone
    # The load it carries (experiments/observe/load.py): None when not read (a file from before, a threaded
    # server's threads, which share one fd table, or what the kernel refused: the result's notes say which)
    connections_held: int | None = None  # open connections in its fd table at the last sample
    connections_held_peak: int | None = None  # most at any sample
    connections_observed: int | None = None  # distinct connections seen held by it at one sample or more
    bytes_in: int | None = None  # what its connections received while observed (tcpi_bytes_received)
    bytes_out: int | None = None  # what they sent and had acknowledged (tcpi_bytes_acked)
    segments_in: int | None = None  # data segments received (tcpi_data_segs_in)
    segments_out: int | None = None  # data segments sent (tcpi_data_segs_out)
    # A thread of a threaded server: the connections its own epoll watched (thread_split.py: the thread it was handed
    # to, which serves it) at the last look, the most at one look, distinct at any from the look it was first placed
    # at (its epoll seen, from 1); None: not looked at, or not placed (at the last look; ever)
    serving_held: int | None = None
    serving_peak: int | None = None
    serving_seen: int | None = None
    serving_from: int | None = None
    # what the connections its epoll watched carried while observed (each counted from its start, or from the first
    # look for one open as observe began, to its close);
    # None: not split (as serving_seen), or a file from before
    serving_bytes_in: int | None = None
    serving_bytes_out: int | None = None

    @property
    def count(self) -> int | None:
        """Connections it took: accepted (exact) or seen (approximate)."""
        return self.accepts if self.accepts is not None else self.seen

    @property
    def label(self) -> str:
        return f"thread {self.tid}" if self.tid is not None else f"pid {self.pid}"


@dataclass(frozen=True)
class ObserveInterval:
    """One interval of the observation (about a second): what each worker took and used in it."""

    end_s: float  # seconds since the start
    span_s: float
    accepts: tuple[int, ...]  # per worker: accepted (or seen, approximate)
    empty: tuple[int, ...]  # per worker: accepts that came back empty; () when not traced
    cpu: tuple[float, ...]  # per worker: CPU used as a share of one CPU over the interval
    queue_max: int | None  # the listen queues' summed depth: most seen in the interval
    queue_mean: float | None
    overflows: int = 0  # ListenOverflows in the server's namespace during the interval
    held: tuple[int, ...] = ()  # per worker: connections held at the interval's last load sample; () none
    bytes_in: tuple[int, ...] = ()  # per worker: bytes its connections received in the interval; () none

    @property
    def total(self) -> int:
        return sum(self.accepts)

    def rate(self) -> float:
        return self.total / self.span_s if self.span_s > 0 else 0.0

    def joined(self, then: ObserveInterval) -> ObserveInterval:
        """This interval and the one right after it, as one."""
        span = self.span_s + then.span_s

        def weighted(x: float, y: float) -> float:
            return (x * self.span_s + y * then.span_s) / span if span > 0 else (x + y) / 2

        maxes = [m for m in (self.queue_max, then.queue_max) if m is not None]
        means = [m for m in (self.queue_mean, then.queue_mean) if m is not None]
        return ObserveInterval(
            end_s=then.end_s,
            span_s=round(span, 3),
            accepts=tuple(x + y for x, y in zip(self.accepts, then.accepts, strict=True)),
            empty=tuple(x + y for x, y in zip(self.empty, then.empty, strict=True)),
            cpu=tuple(round(weighted(x, y), 4) for x, y in zip(self.cpu, then.cpu, strict=True)),
            queue_max=max(maxes) if maxes else None,
            queue_mean=round(weighted(*means), 3) if len(means) == 2 else (means[0] if means else None),
            overflows=self.overflows + then.overflows,
            held=then.held or self.held,
            bytes_in=_added(self.bytes_in, then.bytes_in),
        )


def _added(one: tuple[int, ...], other: tuple[int, ...]) -> tuple[int, ...]:
    """Two intervals' per-worker figures added; one's alone where the other has none."""
    if one and other:
        return tuple(x + y for x, y in zip(one, other, strict=True))
    return one or other


_TUPLES = ("accepts", "empty", "cpu", "held", "bytes_in")


@dataclass(frozen=True)
class Reloaded:
    """Processes of the server's program that started while it was observed and hold its listener as the window
    ends, or were seen accepting on it during the window (reloaded.py, newcomers.py: a reload's new worker, each of
    two reloads', a refork's, a replacement): their accepts are not among the workers' (each its own, `accepts`)."""

    pids: tuple[int, ...]  # in the order they started (a file from before: by pid)
    after_s: float  # seconds into the window the first of them started (0: before the window, after the choice)
    # what its config says of the hand-off (HAProxy's multi-queue), read after the window; None: nothing to read
    handoff: HandOffRead | None = None
    # whether the first takes over from the processes watched (reloaded.py's takes_over: started by one of them, or
    # naming one with HAProxy's -sf/-st); False: neither (another server on the port); None: a file from before
    takes_over: bool | None = None
    starts: tuple[float, ...] = ()  # when each of `pids` started, seconds into the window (); a file from before
    accepts: tuple[int, ...] = ()  # what each of `pids` accepted while observed, the kernel's count; (): not counted
    # those of `pids` no longer holding the listener as the window ended: exited, or closed it and ran on (a soft stop)
    left: tuple[int, ...] = ()


@dataclass(frozen=True)
class ObserveResult:
    target: str  # what was asked for: "pid 123", "port 8080"
    program: str  # the workers' command name
    master: int | None
    ports: tuple[int, ...]
    listeners: int
    backlog: int | None  # the largest listen() backlog (None: read from /proc, which does not show it)
    workers: tuple[ObservedWorker, ...]
    intervals: tuple[ObserveInterval, ...]
    duration_s: float  # what was asked
    wall_s: float  # how long it observed
    traced: bool  # counts are the kernel's (bpftrace), exact; False: sampled from /proc, approximate
    source: str  # how accepts were counted, or why they could not be
    queue_every_s: float
    queue_samples: int
    queue_max: int | None
    queue_mean: float | None
    counters: dict[str, int]  # listen counters' deltas in the server's network namespace
    namespace: str
    mechanism: ObservedMechanism | None = None
    environment: Environment | None = None
    interrupted: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    load_samples: int = 0  # looks at who holds what and what it carried (0: not read, or a file from before)
    load_every_s: float | None = None  # the time between two of them, on average: the pace actually used
    accepted_seen: int | None = None  # connections accepted while observed that a load sample saw held
    load_longest_s: float | None = None  # the longest time between two load samples (None: fewer than two)
    # connections that closed between two load samples while busy (data came in since the sample before their
    # last): what each carried after its last sample, up to load_longest_s of it, is not counted
    closed_busy: int | None = None
    closed_busy_bytes_in: int | None = None  # the bytes in counted on those connections
    # The kernel's announcements of closes (load.py; None: not read, or a file from before): connections closed
    # while observed whose bytes were counted to their close, announcements it dropped (its buffer full: those
    # connections' tails are not counted), and connections no look saw whose worker is not known (their bytes
    # in, counted, are in no worker's share)
    closes_counted: int | None = None
    closes_lost: int | None = None
    # announcements not read to keep the reader within its CPU budget (tcp_destroy.SHARE): those connections
    # are counted to their last look, and one no look saw not at all (None: a file from before the budget)
    closes_skipped: int | None = None
    closed_unlooked: int | None = None
    closed_unlooked_bytes_in: int | None = None
    # announcements read after the last look, while observe settled, of connections no look saw: each may have
    # closed in the window's last moments or after it, so they are in no count, and said (None: a file from before)
    closes_late: int | None = None
    closes_late_bytes_in: int | None = None
    # the server kind it was recognised as, as inspect recognises it (run.py `recognised_kind`): uvicorn, whose
    # workers' command name is python3; None: one this tool does not know, or a file from before
    recognised: str | None = None
    # a threaded server's load as a whole (its threads share one fd table, so no worker's own is known): the data
    # segments its connections received while observed and the connections a look saw held; None: not threaded,
    # not read, or a file from before
    process_segments_in: int | None = None
    process_connections: int | None = None
    # the handshake packets the server's own listeners dropped while observed (their sk_drops: `ss -ltm`'s d), where
    # `counters` has every listener's of the namespace; None: not read, or a file from before
    listener_drops: int | None = None
    # what the server's own config said, read while it ran, of handing the connections its threads accept on to
    # other threads (HAProxy's tune.listener.multi-queue: handoff.py); None: nothing to read, or a file from before
    handoff: HandOffRead | None = None
    # processes of its program that started while it was observed and hold its listener at the end (a reload's);
    # None: none, or a file from before
    reloaded: Reloaded | None = None
    # a threaded server's split of its connections by the thread whose epoll watches them (thread_split.py): looks
    # taken (0: none, or a file from before), connections in no known epoll at one look (the most), why no split
    serving_looks: int = 0
    serving_unplaced: int | None = None
    serving_why: str | None = None

    @property
    def name(self) -> str:
        """What the report calls the server: inspect's name for it (uvicorn), else its workers' command name."""
        return self.recognised or self.program

    @property
    def loaded(self) -> bool:
        """The load each worker carries was read (bytes and connections held per worker)."""
        return bool(self.workers) and all(w.bytes_in is not None for w in self.workers)

    @property
    def threaded(self) -> bool:
        return any(w.tid is not None for w in self.workers)

    @property
    def counts(self) -> tuple[int, ...] | None:
        """Connections per worker (exact or approximate); None when neither was counted."""
        counts = [w.count for w in self.workers]
        return None if any(c is None for c in counts) else tuple(c or 0 for c in counts)

    @property
    def cpu(self) -> tuple[float, ...]:
        return tuple(w.cpu_s or 0.0 for w in self.workers)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ports"] = list(self.ports)
        data["workers"] = [_without(asdict(w), _SERVING_WORKER) for w in self.workers]
        data["intervals"] = [{**asdict(i), **{k: list(getattr(i, k)) for k in _TUPLES}} for i in self.intervals]
        data["notes"] = list(self.notes)
        for name in ("recognised", "process_segments_in", "process_connections", "handoff", "reloaded"):
            if data[name] is None:
                del data[name]  # saved as before the field where it says nothing
        if not self.serving_looks and self.serving_why is None:  # not looked at: saved as before the fields
            data = {key: value for key, value in data.items() if key not in _SERVING}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ObserveResult:
        from ...results.typed import build

        result = build(cls, dict(data))  # the whole document checked against its shape (OBSERVE_SHAPE)
        mechanism, environment, handoff = data.get("mechanism"), data.get("environment"), data.get("handoff")
        return dataclasses.replace(
            result,
            workers=tuple(build(ObservedWorker, w) for w in data["workers"]),
            intervals=tuple(build(ObserveInterval, i) for i in data["intervals"]),
            mechanism=None if mechanism is None else build(ObservedMechanism, mechanism),  # its lists become tuples
            environment=None if environment is None else build(Environment, environment),
            handoff=None if handoff is None else build(HandOffRead, handoff),
        )  # reloaded, with its handoff, is built by build as its own type


_SERVING_WORKER = (
    "serving_held",
    "serving_peak",
    "serving_seen",
    "serving_from",
    "serving_bytes_in",
    "serving_bytes_out",
)
_SERVING = ("serving_looks", "serving_unplaced", "serving_why")


def _without(data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """`data` without those of `names` that are None: saved as before the fields where they say nothing."""
    return {key: value for key, value in data.items() if key not in names or value is not None}


def _one_value_per_worker(doc: Mapping[str, Any], at: str) -> None:
    """Each interval has one figure per worker (empty accepts, held, bytes in: or none at all, when not read)."""
    width = len(doc["workers"])
    for index, interval in enumerate(doc["intervals"]):
        for name in ("accepts", "cpu", "empty", "held", "bytes_in"):
            if name not in interval:
                continue  # held and bytes_in: a file from before the load was read
            if len(interval[name]) != width and not (name != "accepts" and name != "cpu" and not interval[name]):
                where = child(child(child(at, "intervals"), index), name)
                raise SchemaError(where, f"has {len(interval[name])} values, not one value per worker ({width})")


def _held_within_peak(doc: Mapping[str, Any], at: str) -> None:
    """A worker holds at its last look no more connections than it held at most (at any look, the last one too)."""
    for index, worker in enumerate(doc["workers"]):
        held, peak = worker.get("connections_held"), worker.get("connections_held_peak")
        if held is not None and peak is not None and held > peak:
            where = child(child(child(at, "workers"), index), "connections_held")
            raise SchemaError(where, f"is {held}, more than the most it held at once (connections_held_peak {peak})")


def _reload_lists_match(doc: Mapping[str, Any], at: str) -> None:
    """A reload's per-newcomer lists (starts, accepts) have one value per pid, or none (a file from before them); the
    newcomers it says left are among its pids. Read otherwise, the notes would pair a pid with another's figures."""
    reload = doc.get("reloaded")
    if not isinstance(reload, Mapping) or not isinstance(reload.get("pids"), list):
        return
    pids = reload["pids"]
    for name in ("starts", "accepts"):
        values = reload.get(name)
        if isinstance(values, list) and values and len(values) != len(pids):
            where = child(child(at, "reloaded"), name)
            raise SchemaError(where, f"has {len(values)} values, not one per pid of reloaded.pids ({len(pids)})")
    left = reload.get("left")
    if isinstance(left, list) and (stray := [pid for pid in left if pid not in pids]):
        raise SchemaError(child(child(at, "reloaded"), "left"), f"names pid {stray[0]}, not among reloaded.pids")


OBSERVE_SHAPE = known(
    ObserveResult,
    derive(
        ObserveResult,
        ports=ListOf(PORT),
        counters=MapOf(SIGNED),
        rules=(_one_value_per_worker, _held_within_peak, _reload_lists_match),
    ),
)
