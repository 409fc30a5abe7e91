"""observe's state (run.py drives it): the probes it joined, the readings at the start, and the intervals so far;
`result` is the observation up to now, however it ends."""

from __future__ import annotations

import time
from collections.abc import Callable

from ...core import environment
from ...probes.accept_ports import ListenerPorts
from ...probes.accept_watch import SOURCE, AcceptWatch, ThreadCounts, own_ports
from ...probes.listen_drops import DropsReading, dropped_between, summed
from ...probes.listeners import drops_reading
from ...probes.server_netns import same_namespace
from ...probes.serving import process_info
from ...servers.registry import recognise
from ...servers.watched import gone
from .load import LoadSampler
from .mechanism import Reading
from .newcomers import Newcomers, followed_comms
from .reloaded import listening_ports
from .result import ObservedMechanism, ObservedWorker, ObserveInterval, ObserveResult
from .sampling import SAMPLE_EVERY_S, Holdings, PacedUsage, QueueSampler, Usage, counters, paced
from .server import Watched
from .thread_split import ThreadSplit

Snapshot = Callable[[ObserveResult], None]
INTERVAL_S = 1.0
NOT_TRACED = "not traced ({why}): each worker's connections sampled from its fd table every interval; "
NOT_TRACED += "short ones are missed"
FED = "the workers accept none: pid {acceptor} accepts each connection and passes it to one over a Unix socket"
# fd-pass traced: the kernel's count is the acceptor's (Node's primary under SCHED_RR), said as its, not a worker's
FED_COUNTED = "; it accepted {accepted:,} while observed (the kernel's count, its own: bpftrace on the accept calls)"


def recognised_kind(watched: Watched) -> str | None:
    """The server kind, recognised as inspect recognises it (servers/registry.py `recognise` on the topmost
    process's name and command line): the master's where there is one (uvicorn's supervisor runs `.../uvicorn
    app:app`, its workers `python3 -c from multiprocessing.spawn ...`), else the first worker's."""
    top = process_info(watched.master if watched.master is not None else watched.workers[0])
    kind = recognise(top.name, top.argv) if top is not None else None
    return kind.name if kind is not None else None


class Observer:
    """The state of one observation: the probes, the readings at the start, and the intervals so far."""

    def __init__(
        self, watched: Watched, trace: bool, duration_s: float, interval_s: float, newcomers: Newcomers | None = None
    ) -> None:
        self.watched = watched
        self.recognised = recognised_kind(watched)
        self.duration_s = duration_s
        self.interval_s = interval_s
        # fd-pass: the workers never accept (the acceptor does, and passes each connection on): the connections
        # are counted where they are held, in each worker's fd table
        passed = watched.acceptor is not None
        # a newcomer of the program (a reload's worker) is counted too, under its own pid (newcomers.py)
        self.newcomers = newcomers
        comms = followed_comms(watched) if newcomers is not None else ()
        self.watch = AcceptWatch(watched.workers, gated=True, comms=comms) if trace and not passed else None
        self.why = "--no-trace" if not trace else FED.format(acceptor=watched.acceptor) if passed else ""
        # fd-pass: the acceptor's accepts, counted apart (they are every connection's, and no worker's)
        self.acceptor_watch = AcceptWatch([watched.acceptor], gated=True) if trace and watched.acceptor else None
        # the port each accept was on: --port A counts A's alone where the workers listen on others too
        self.listener_ports = ListenerPorts(watched.netns_pid)
        self.other_ports = tuple(sorted(set().union(*map(listening_ports, watched.workers)) - set(watched.ports)))
        self.queue = QueueSampler(watched)
        self.every_s = SAMPLE_EVERY_S  # the listen queue's pace
        self.hold_every_s = SAMPLE_EVERY_S  # untraced: the pace of looking for who holds what
        self.hold_cost_s = 0.0  # what the last such look took
        self.holdings: Holdings | None = None
        self.load = LoadSampler(watched)
        # which thread serves which connection, by the epoll that watches it: a one-process threaded server's
        self.split = ThreadSplit(watched) if watched.threaded and len(watched.workers) == 1 else None
        self.intervals: list[ObserveInterval] = []
        self.exited: dict[int, float] = {}  # unit index -> seconds into the observation
        self.mechanism: ObservedMechanism | None = None  # inspect's answer, kept from `reading` (see run.py's _finish)
        self.reading: Reading | None = None
        self.environment = environment.current()
        self._usage = PacedUsage(interval_s)  # every thread's switches of a worker process, as increments
        self._start_usage: list[Usage | None] = []
        self._last_usage: list[Usage | None] = []
        self._last_counts: list[int] = []
        self._last_empty: list[int] = []
        self._counters: dict[str, int] = {}
        self._last_overflows = 0
        self.started = 0.0
        self._last_tick = 0.0

    # -- start and the readings ------------------------------------------------------------------
    def start(self) -> None:
        if self.watch is not None:
            self.watch.start()
            if not self.watch.attached:
                self.why = self.watch.stop().why
                self.watch = None
        if self.watch is None:
            self.holdings = Holdings(self.watched)
        if self.acceptor_watch is not None:
            self.acceptor_watch.start()
            if not self.acceptor_watch.attached:
                self.acceptor_watch.close()
                self.acceptor_watch = None
        units = self.watched.units
        self._start_usage = self._usage.read(units, every=True)
        self._last_usage = list(self._start_usage)
        self._last_counts = [0] * len(units)
        self._last_empty = [0] * len(units)
        self._counters = counters(self.watched.netns_pid)
        self._drops = self._own_drops()
        self.load.open_closes()  # before the first look: every close after it is announced
        for watch in (self.watch, self.acceptor_watch):
            if watch is not None:
                watch.begin()  # the accepts counted from here, where the load's first look starts (run.py freezes)
        self.load.sample()  # where each open connection's counts start
        self.started = self._last_tick = time.monotonic()
        # inspect reads every worker's fd table a few times (a second on a busy machine): asked beside the
        # watching, so that watching starts at once and the answer is kept however the observation ends
        self.reading = Reading(self.watched)

    def sample(self) -> None:
        """One sample of the listen queue, paced by its own cost (cheap over netlink: every 100 ms)."""
        began = time.perf_counter()
        self.queue.sample()
        if self.watch is not None and self.newcomers is not None:  # read while they run: a reload's may not last
            self.newcomers.look(self.own(self.watch.totals()))
        self.every_s = paced(time.perf_counter() - began)

    def sample_holdings(self) -> None:
        """Untraced: one look at who holds which connection, paced by its own cost (the workers' fd tables and
        the server's connections: slow where there are many, and then no more often than once an interval)."""
        assert self.holdings is not None
        began = time.perf_counter()
        self.holdings.sample()
        self.hold_cost_s = time.perf_counter() - began
        self.hold_every_s = paced(self.hold_cost_s)

    def sample_load(self) -> None:
        """Who holds which connection and what each carried since the last look, paced by its own cost (a
        dump of every connection of the server's ports and the workers' fd tables: slow where there are
        many)."""
        self.load.sample()

    def own(self, totals: ThreadCounts) -> ThreadCounts:
        """The kernel's counts of accepts on the watched ports' listeners: those on the workers' other ports (another
        frontend's, a metrics port's) left out (probes/accept_ports.py); read as they come, each descriptor once."""
        return own_ports(totals, self.watched.ports, self.listener_ports)

    @property
    def traced(self) -> bool:
        return self.watch is not None

    def _counts(self, totals: ThreadCounts | None) -> tuple[list[int], list[int]]:
        """Per unit: (connections so far, empty accepts so far)."""
        if totals is None:
            assert self.holdings is not None
            seen = self.holdings.taken(self.watched.units, self.load.seen)
            return seen, [0] * len(seen)
        pairs = [totals.of(u.pid, u.tid) for u in self.watched.units]
        return [a for a, _ in pairs], [e for _, e in pairs]

    def usage(self) -> list[Usage | None]:
        """Every worker's CPU and context switches now, all its threads' (the last tick's, read where the window
        ends: run.py's end)."""
        return self._usage.read(self.watched.units, every=True)

    def tick(
        self,
        totals: ThreadCounts | None = None,
        last: bool = False,
        at: float | None = None,
        usage_at: list[Usage | None] | None = None,
    ) -> None:
        """Close the current interval: read every counter and append what moved since the last one. The
        `last` one, when much shorter than an interval, is added to the one before (a rate over a few
        milliseconds would say nothing). `at`: when the totals were counted up to, if not now; `usage_at`: the
        workers' usage read then (usage()), if not read now."""
        now = time.monotonic() if at is None else min(at, time.monotonic())
        span = now - self._last_tick
        if totals is None and self.watch is not None:
            totals = self.own(self.watch.totals())
        if self.holdings is not None and not last:
            self.sample_holdings()  # at least once an interval, however slowly sampling is paced
        if not self.queue.pending:
            self.sample()  # and the queue: every interval says how deep it was
        counts, empty = self._counts(totals)
        if self.split is not None:
            self.split.look(last)  # once an interval (paced by its cost), and at the window's end
        cpu, now_used = [], self._usage.read(self.watched.units, every=last) if usage_at is None else usage_at
        for index, unit in enumerate(self.watched.units):
            used = now_used[index]
            before = self._last_usage[index]
            cpu.append(round((used.cpu_s - before.cpu_s) / span, 4) if used and before and span > 0 else 0.0)
            if used is not None:
                self._last_usage[index] = used
            if index not in self.exited and gone(unit.id):  # a zombie too, whose usage still reads
                self.exited[index] = round(now - self.started, 3)
        overflows = counters(self.watched.netns_pid).get("TcpExtListenOverflows", 0)
        overflowed = overflows - self._counters.get("TcpExtListenOverflows", overflows) - self._last_overflows
        self._last_overflows += overflowed
        queue_max, queue_mean = self.queue.interval()
        held, moved = self._load_interval()
        closed = ObserveInterval(
            end_s=round(now - self.started, 3),
            span_s=round(span, 3),
            accepts=tuple(c - last for c, last in zip(counts, self._last_counts, strict=True)),
            empty=tuple(e - last for e, last in zip(empty, self._last_empty, strict=True)) if self.traced else (),
            cpu=tuple(cpu),
            queue_max=queue_max,
            queue_mean=None if queue_mean is None else round(queue_mean, 3),
            overflows=max(0, overflowed),
            held=held,
            bytes_in=moved,
        )
        if last and self.intervals and span < self.interval_s / 4:
            closed = self.intervals.pop().joined(closed)
        self.intervals.append(closed)
        self._last_counts, self._last_empty, self._last_tick = counts, empty, now

    def _load_interval(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Per worker: connections held at the interval's last load sample, bytes in over the interval; none
        when no sample was taken in it, or the workers are threads (they share one fd table)."""
        loaded = self.load.interval()
        if loaded is None or self.watched.threaded:
            return (), ()
        held, moved = loaded
        return tuple(held[u.pid] for u in self.watched.units), tuple(moved[u.pid] for u in self.watched.units)

    def everyone_gone(self) -> bool:
        return len(self.exited) == len(self.watched.units)

    # -- the result ------------------------------------------------------------------------------
    def result(self, interrupted: bool = False, notes: tuple[str, ...] = ()) -> ObserveResult:
        """The observation so far (every interval closed up to now)."""
        units = self.watched.units
        workers = []
        for index, unit in enumerate(units):
            first, last = self._start_usage[index], self._last_usage[index]
            taken = sum(i.accepts[index] for i in self.intervals)
            workers.append(
                ObservedWorker(
                    index=index,
                    pid=unit.pid,
                    tid=unit.tid,
                    accepts=taken if self.traced else None,
                    empty=sum(i.empty[index] for i in self.intervals) if self.traced else None,
                    seen=taken if not self.traced and unit.tid is None else None,
                    cpu_s=round(last.cpu_s - first.cpu_s, 6) if first and last else None,
                    voluntary_switches=last.voluntary - first.voluntary if first and last else None,
                    involuntary_switches=last.involuntary - first.involuntary if first and last else None,
                    exited_s=self.exited.get(index),
                    **self.load.of(unit.pid, per_process=self.watched.threaded),
                    **(self.split.of(unit.tid, self.load.by_inode) if self.split is not None else {}),
                )
            )
        samples = self.queue.samples
        # the drops before the counters, as at the start the counters before the drops: the counters' window holds
        # the drops', so the verdict's bound (ListenDrops' growth) is never read over a shorter one (verdict._own_drops)
        dropped = dropped_between(self._drops, self._own_drops())
        now = counters(self.watched.netns_pid)
        own = same_namespace(self.watched.netns_pid)
        return ObserveResult(
            target=self.watched.target,
            program=self.watched.program,
            recognised=self.recognised,
            master=self.watched.master,
            ports=self.watched.ports,
            listeners=len(self.watched.listeners),
            backlog=max((r.backlog for r in self.watched.listeners if r.backlog is not None), default=None),
            workers=tuple(workers),
            intervals=tuple(self.intervals),
            duration_s=self.duration_s,
            wall_s=round(self._last_tick - self.started, 3),
            traced=self.traced,
            source=self.watch_source(),
            queue_every_s=round(self.every_s, 3),
            queue_samples=len(samples),
            queue_max=max(samples) if samples else None,
            queue_mean=round(sum(samples) / len(samples), 3) if samples else None,
            counters={k: now[k] - self._counters[k] for k in now if k in self._counters},
            listener_drops=dropped,
            namespace="this tool's" if own else "the server's own",
            mechanism=self.mechanism if self.mechanism or not self.reading else self.reading.ready(),
            environment=self.environment,
            interrupted=interrupted,
            notes=notes,
            **self.load.summary(),
            serving_looks=self.split.looks if self.split is not None else 0,
            serving_unplaced=self.split.unplaced if self.split is not None else None,
            serving_why=self.split.why if self.split is not None else None,
        )

    def _own_drops(self) -> DropsReading | None:
        """The handshake packets the server's own listeners have dropped so far (their sk_drops, as `ss -ltm` shows
        it, with the namespace's counters that tell a deferred ACK from a listen drop: probes/listen_drops), every
        port's summed: ListenOverflows counts every listener of the namespace. None where one is unread."""
        own = self.watched.inodes  # not another program's on the port and another address: its d16 read as theirs
        holders = (
            self.watched.netns_pid,
            *((self.watched.master,) if self.watched.master else ()),
            *self.watched.workers,
        )
        return summed(drops_reading(port, own, (self.watched.netns_pid,), holders) for port in self.watched.ports)

    def watch_source(self) -> str:
        if self.watch is not None:
            return SOURCE
        if self.acceptor_watch is not None and self.watched.acceptor is not None:
            accepted, _ = self.own(self.acceptor_watch.totals()).of(self.watched.acceptor)  # its port's alone
            return NOT_TRACED.format(why=self.why + FED_COUNTED.format(accepted=accepted))
        return NOT_TRACED.format(why=self.why)

    def close(self) -> None:
        self.load.close()
        if self.watch is not None:
            self.watch.close()
        if self.acceptor_watch is not None:
            self.acceptor_watch.close()
