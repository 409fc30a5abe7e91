"""The runs every experiment is made of: `run_sequential` (run, compare, herd, serve-less experiments) and
`run_latency` (latency, sweep) differ only in the load they drive and the result they build, each through the one
lifecycle (lifecycle.py: start, evidence, stop, every process ended on every path). `drive_load` is the one way
any experiment drives a load at a started target (latency, burst, ramp, reload): it checks the workers while the
load runs and returns one `LoadSummary`. `run_each` (partial.py) runs variants one after another and keeps what
finished when interrupted or stopped by an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..analysis.order import verdict
from ..core.errors import PlanError, WorkerExited
from ..core.measures import ConnectionRecord
from ..core.protocol import ClientProtocol
from ..core.signals import keep, release
from ..core.spec import SequentialLoad, ServerSpec
from ..core.target import Target
from ..loads.sequential import loop_for
from ..loads.sequential import run_sequential as drive_sequential
from ..servers.registry import elsewhere, plan
from .lifecycle import Measured, as_answered, lifecycle, result_or_exit
from .loading import Loading as Loading  # reload and the tests import it from here
from .observed_on import observing
from .order.result import RunResult
from .partial import RunInterrupted as RunInterrupted  # where the experiments and the CLI import them from
from .partial import RunStopped as RunStopped
from .partial import run_each as run_each

if TYPE_CHECKING:
    from ..core.concurrent_load import ConcurrentLoad
    from ..core.load_summary import LoadSummary
    from ..loads.generator import LoadGenerator
    from ..loads.hosts.driven import HostsLoad
    from .latency.result import LatencyResult

Tick = Callable[[int, float], None]


def run_sequential(
    server: ServerSpec,
    load: SequentialLoad,
    on_record: Callable[[ConnectionRecord], None] | None = None,
    on_started: Callable[[Target], None] | None = None,
) -> RunResult:
    """One sequential run: nc-style connections one after another, who served each, and the verdict.
    `on_started(target)` runs once the server listens, before the first connection (atlas inspects it)."""
    load = load.validated()
    loop_for(load.driver)  # io_uring refused before any worker starts
    resolved = plan(server)  # once: as the lifecycle runs it (a kind may fix its workers: Caddy's one process)
    server = resolved.spec
    finished: list[ConnectionRecord] = []

    def record(rec: ConnectionRecord) -> None:
        finished.append(rec)
        if on_record:
            on_record(rec)

    def in_order() -> list[ConnectionRecord]:
        """The records so far, one per connection: the first it got (a signal while one was passed on passes
        it on again as aborted: loads/sequential_books.py `stopped`)."""
        first: dict[int, ConnectionRecord] = {}
        for rec in finished:
            first.setdefault(rec.seq, rec)
        return [first[seq] for seq in sorted(first)]

    def describe() -> str:
        n, served = len(kept := in_order()), sum(r.served for r in kept)  # a record passed on twice: once
        return f"the run stopped after {n} connections ({served} served, {n - served} failed)"

    accept_log: dict[str, Any] = {}  # how connections of a server that closes at once were attributed
    stopped: list[KeyboardInterrupt] = []  # Ctrl-C, SIGTERM or SIGHUP during the load: the records so far are kept

    def drive(target: Target) -> list[ConnectionRecord]:
        try:
            records = drive_to_end(target)  # a server elsewhere nobody answered for: one line, as a load's
            return records if (remote := elsewhere(target)) is None else list(remote.reached_by(records))
        except KeyboardInterrupt as cause:
            if not finished:
                raise  # nothing measured yet: nothing to keep
            stopped.append(cause)
            return in_order()

    def drive_to_end(target: Target) -> list[ConnectionRecord]:
        if on_started:
            on_started(target)
        if not target.attribution.holds_socket or target.protocol.keeps_open:
            return drive_sequential(target, load, record)
        # Replies may not name the worker, and the server closes each connection as soon as it has
        # answered, before the holder of its socket can be looked up: the kernel says who accepted it.
        from ..probes.accept_log import AcceptLog

        with AcceptLog(list(target.pids)) as log:
            log.start()
            try:
                return drive_sequential(target, load, record, log if log.attached else None)
            finally:
                counts = log.stop_log()  # whether each connection's accept was read, not how many
                accept_log.update(available=counts.available, why=counts.why)

    def build(records: list[ConnectionRecord], m: Measured) -> RunResult:
        mode = resolved.mode
        model, why = resolved.expectation()
        woken = m.counters if mode.switches_are_wakeups else ()
        if mode.timed_waits:  # a sleep that ended on its own timer woke for no connection
            woken = tuple(
                dataclasses.replace(c, voluntary_switches=max(0, (c.voluntary_switches or 0) - (c.empty or 0)))
                for c in woken
            )
        judged = verdict(records, server.workers, model, why, woken, mechanism_known=resolved.kind.launched)
        if records and not any(r.served for r in records):  # one answered naming no worker: not 'nothing served'
            from .target_unanswered import UNNAMED_PATTERN, answered_unnamed  # (a --target's page; the report's rule)

            if any(answered_unnamed(server, r.error) for r in records):
                judged = dataclasses.replace(judged, pattern=UNNAMED_PATTERN)
        result = RunResult(
            server=server,
            load=load,
            environment=m.environment,
            port=m.port,
            records=tuple(records),
            counters=m.counters,
            verdict=judged,
            evidence={**m.evidence, **({"accept_log": accept_log} if accept_log else {})},
            wall_s=m.wall_s,
            unsettled=m.unsettled,
            interrupted=m.exited is not None or bool(stopped),
        )
        if stopped and m.exited is None:
            raise RunInterrupted([result], stopped[0])
        return result_or_exit(result, m)

    return lifecycle(resolved, drive, describe, build, partial=in_order)


def drive_load(
    target: Target, load: ConcurrentLoad, workers: int, on_tick: Tick | None = None, loading: Loading | None = None
) -> LoadSummary:
    """Drive one load at a started target and summarise it. Every TICK the target is checked (a dead
    worker ends the run with its name, not a pile of timeouts), then `on_tick(done, elapsed)` runs.
    Ctrl-C or SIGTERM ends the load early: the summary keeps what it got, with the signal in
    `interruption` for the caller to raise once its result is built."""

    def tick(done: int, elapsed: float) -> None:
        target.check_alive()
        if on_tick:
            on_tick(done, elapsed)

    release()  # an earlier step's outcome, kept since its end: a signal that came meanwhile stops here
    with observing(target, load) as watch:
        with _generator(target, load) as generator:
            if loading is not None:
                loading.generator, loading.load = generator, load
            outcome = generator.run(tick)
            keep()  # the load is over: a signal while its drivers stop must not lose it (the lifecycle takes it)
        remote = elsewhere(target)
        if remote is not None and outcome.interrupted is None:
            remote.reached(outcome.ok, outcome.errors)  # nobody there: one line, not a report of refusals
        summary = outcome.summary(workers)
        if loading is not None:
            loading.summary = summary
        return summary if watch is None else dataclasses.replace(summary, observed=(watch.joined(target, summary),))


def _generator(target: Target, load: ConcurrentLoad) -> LoadGenerator | HostsLoad:
    """The load's generator: its driver processes here, or on the client hosts of --clients."""
    from ..loads.generator import LoadGenerator

    protocol = load_protocol(target, load)
    # a server elsewhere: the drivers count by reply key, placed on worker indices after the load
    remote = elsewhere(target)
    attribution = target.attribution if remote is None else remote.by_reply
    if load.clients is None or not load.on_client_hosts:
        return LoadGenerator(target.address, attribution, load, protocol)
    from ..loads.hosts.driven import HostsLoad

    if remote is not None:
        remote.driven_from_hosts()  # this host's kernel counters are then none of the run's
    return HostsLoad(target.address, attribution, load, protocol, load.clients)


def load_protocol(target: Target, load: ConcurrentLoad) -> ClientProtocol:
    """What the load speaks: a request per connection read to EOF, or several over a kept connection, each
    reply framed by the protocol (PlanError when the server's protocol has no such variant)."""
    if not load.keeps_connections:
        return target.protocol.closing()
    kept = target.protocol.persistent()
    if kept is None:
        raise PlanError(
            f"--requests-per-connection and --pool need a server that keeps connections; its protocol "
            f"({target.protocol.name}) answers one request per connection"
        )
    return kept


def run_latency(
    server: ServerSpec, load: ConcurrentLoad, on_tick: Tick | None = None, title: str | None = None
) -> LatencyResult:
    """One latency run: CPU-bound workers under a closed-loop load (or an open one: `load.rate`). Ctrl-C keeps
    what was measured: RunInterrupted carries the partial result, marked interrupted."""
    from ..probes.work import estimate_work_us
    from .latency.model_check import predict
    from .latency.result import LatencyResult, default_title

    load = load.validated()
    resolved = plan(server)  # once: as the lifecycle runs it (a kind may fix its workers: Caddy's one process)
    server = resolved.spec
    work = estimate_work_us(server, resolved.kind.spins_here)
    loading = Loading()
    kernel: dict[str, Any] = {}  # per-worker accepts counted by the kernel, for a server that does not say
    kept: list[LoadSummary] = []  # the load's outcome when an attached worker's exit stopped it

    def drive(target: Target) -> LoadSummary:
        summary = _counted(target) if target.attribution.holds_socket else _driven(target)
        if isinstance(summary.interruption, WorkerExited):  # the drivers' tallies so far: see partial
            kept.append(summary)
            raise summary.interruption
        return summary

    def _driven(target: Target) -> LoadSummary:
        return drive_load(target, load, server.workers, on_tick, loading)

    def _counted(target: Target) -> LoadSummary:
        from ..probes.accepts import AcceptCounter  # replies may not name the worker: count accepts in the kernel

        # attached by its master's pid: its children that start during the run (a reload) are counted too, and
        # the master's own accepts (Node's primary under SCHED_RR accepts every connection and passes it on)
        master = server.attach[0] if len(server.attach) == 1 and server.attach[0] not in target.pids else None
        # the accepts on its port alone: a server's workers may listen on others too (HAProxy's frontends)
        pids = [*target.pids, *([master] if master is not None else [])]
        counter = AcceptCounter(pids, children_of=master, ports=(target.address[1],))
        counter.start()
        try:
            summary = _driven(target)
            counts = counter.stop()
        finally:
            counter.close()
        kernel.update(counts.evidence(counter.children_of))
        if master is not None and counts.available:
            kernel["counts"] = {pid: n for pid, n in counts.counts.items() if pid != master}
            kernel["master_accepted"] = int(counts.counts.get(master, 0))
        return dataclasses.replace(summary, served=tuple(int(counts.counts.get(pid, 0)) for pid in target.pids))

    def build(summary: LoadSummary, m: Measured) -> LatencyResult:
        result = LatencyResult.of(
            summary,
            server=as_answered(server, len(m.pids)),
            load=load,
            environment=m.environment,
            port=m.port,
            counters=m.counters,
            title=title or default_title(server, load=load),
            work_estimate_us=work,
            evidence={
                **m.evidence,
                **({"accept_counts": kernel} if kernel else {}),
                **({"observed_on": [dict(o) for o in summary.observed]} if summary.observed else {}),
            },
            interrupted=summary.interrupted or m.exited is not None,
        )
        result = dataclasses.replace(result, model=predict(result))  # what queueing alone makes of the same figures
        if isinstance(summary.interruption, KeyboardInterrupt) and m.exited is None:
            raise RunInterrupted([result], summary.interruption)
        return result_or_exit(result, m)

    sized = resolved.sized(load.concurrency, load.keeps_connections)
    return lifecycle(sized, drive, loading.describe, build, partial=lambda: kept[0], look_busy=True, cpu_limit=True)


run_closed_loop = run_latency  # its name before 0.3, for older callers of the Python API
