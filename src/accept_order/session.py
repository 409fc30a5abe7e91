"""The one lifecycle every experiment goes through, and the loop over several variants of one.

    evidence before -> start the server -> listeners -> load -> evidence after -> stop -> analyse -> result

`run_sequential` (run, compare, herd, serve-less experiments) and `run_closed_loop` (latency, sweep)
differ only in the load they drive and the result they build; `lifecycle` owns everything else: the
order of start and stop, ending every process on success, error, Ctrl-C and SIGTERM (teardown runs
with signals deferred), and a worker that dies mid-run (one WorkerError naming it, with the counts of
what was driven). `run_each` runs variants one after another and keeps what finished when interrupted.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from . import environment
from .analysis.order import verdict
from .errors import WorkerError
from .experiments.order.result import RunResult
from .loads.sequential import run_sequential as drive_sequential
from .measures import ConnectionRecord, Environment, WorkerCounters
from .probes.evidence import EvidenceCapture
from .servers.registry import checked, expectation, make_target, mode_info
from .servers.target import Target
from .signals import deferred
from .spec import ClosedLoopLoad, SequentialLoad, ServerSpec, sized

if TYPE_CHECKING:
    from .experiments.latency.result import LatencyResult
    from .loads.closed_loop import LoadGenerator

T = TypeVar("T")
R = TypeVar("R")
Tick = Callable[[int, float], None]


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a load that keeps partial results: `results` holds every result that
    was measured (the last one marked interrupted), `cause` the signal's exception."""

    def __init__(self, results: Sequence[Any], cause: KeyboardInterrupt) -> None:
        super().__init__()
        self.results = list(results)
        self.cause = cause


@dataclass(frozen=True)
class Measured:
    """What the lifecycle gathered around any load."""

    environment: Environment
    port: int
    pids: tuple[int, ...]
    counters: tuple[WorkerCounters, ...]
    evidence: dict[str, Any]
    unsettled: int
    wall_s: float


def lifecycle(
    server: ServerSpec, drive: Callable[[Target], T], describe: Callable[[], str], stamps: bool = False
) -> tuple[T, Measured]:
    """Start `server`, run `drive(target)`, stop, and return what drive returned with what was measured.

    `describe()` says how far the load got, for the message when a worker dies mid-run."""
    server = checked(server)
    env = environment.current()
    started = time.perf_counter()
    capture = EvidenceCapture(host=server.host)
    capture.before()  # counters before any worker exists; listeners and affinities while they run
    machine_before = environment.machine_state()  # load average and steal: was the machine busy, stolen from?
    target = make_target(server, stamps=stamps)
    try:
        target.start()
        port = target.address[1]
        capture.listeners(port, "start")
        try:
            outcome = drive(target)
        except WorkerError as exc:
            raise WorkerError(f"{exc}; {describe()}", exc.index) from None
        # A load stopped by Ctrl-C kept a partial result: a signal must not lose it while the workers are
        # stopped (the first one decides how the command ends; later ones are never raised).
        with deferred():
            target.check_alive()
            evidence = capture.after(port, list(target.pids))
            evidence["machine"] = {"before": machine_before, "after": environment.machine_state()}
            counters = target.stop()
        target.check_stopped()  # a worker that died at the very end must not pass for one that idled
        evidence.update(target.own_evidence())  # fd-pass's acceptor, a launched server's own log
        measured = Measured(
            env,
            port,
            tuple(target.pids),
            tuple(counters),
            evidence,
            target.unsettled,
            round(time.perf_counter() - started, 6),
        )
    finally:
        with deferred():
            target.close()
    return outcome, measured


def run_sequential(
    server: ServerSpec, load: SequentialLoad, on_record: Callable[[ConnectionRecord], None] | None = None
) -> RunResult:
    """One sequential run: nc-style connections one after another, who served each, and the verdict."""
    load = load.validated()
    finished: list[ConnectionRecord] = []

    def record(rec: ConnectionRecord) -> None:
        finished.append(rec)
        if on_record:
            on_record(rec)

    def describe() -> str:
        served = sum(1 for r in finished if r.served)
        return f"the run stopped after {len(finished)} connections ({served} served, {len(finished) - served} failed)"

    records, m = lifecycle(server, lambda target: drive_sequential(target, load, record), describe)
    mode = mode_info(server.server, server.mode)
    model, why = expectation(server)
    woken = m.counters if mode.switches_are_wakeups else ()
    if mode.timed_waits:  # a sleep that ended on its own timer woke for no connection
        woken = tuple(
            dataclasses.replace(c, voluntary_switches=max(0, (c.voluntary_switches or 0) - (c.empty or 0)))
            for c in woken
        )
    return RunResult(
        server=server,
        load=load,
        environment=m.environment,
        port=m.port,
        records=tuple(records),
        counters=m.counters,
        verdict=verdict(records, server.workers, model, why, woken),
        evidence=m.evidence,
        wall_s=m.wall_s,
        unsettled=m.unsettled,
    )


def run_closed_loop(
    server: ServerSpec, load: ClosedLoopLoad, on_tick: Tick | None = None, title: str | None = None
) -> LatencyResult:
    """One latency run: CPU-bound workers under a closed-loop load. Ctrl-C keeps what was measured:
    RunInterrupted carries the partial result, marked interrupted."""
    # Imported here: a sequential run (the common, start-up-bound case) never loads the load generator.
    from .experiments.latency.result import LatencyResult
    from .loads.closed_loop import LoadGenerator
    from .probes.work import estimate_work_us

    load = load.validated()
    work = estimate_work_us(server)
    generators: list[LoadGenerator] = []
    kernel: dict[str, Any] = {}  # per-worker accepts counted by the kernel, for a server that does not say

    def drive(target: Target) -> Any:
        def tick(done: int, elapsed: float) -> None:
            target.check_alive()  # a dead worker ends the run with its name, not a pile of timeouts
            if on_tick:
                on_tick(done, elapsed)

        counter = None
        if target.attribution.holds_socket:  # replies may not name the worker: count accepts in the kernel
            from .probes.accepts import AcceptCounter

            counter = AcceptCounter(list(target.pids))
            counter.start()
        try:
            with LoadGenerator(target.address, target.attribution, load, target.protocol.closing()) as generator:
                generators.append(generator)
                outcome = generator.run(tick)
            if counter is not None:
                counts = counter.stop()
                kernel.update(available=counts.available, why=counts.why, counts=counts.counts)
            return outcome
        finally:
            if counter is not None:
                counter.close()

    def describe() -> str:
        done, served = generators[0].finished() if generators else (0, 0)
        return f"the run stopped after {done} connections ({served} served, {done - served} failed)"

    outcome, m = lifecycle(sized(server, load.concurrency), drive, describe)
    from .experiments.latency.result import default_title  # the title is stored in the result

    result = LatencyResult(
        server=server,
        load=load,
        environment=m.environment,
        port=m.port,
        histogram=outcome.histogram,
        errors=dict(outcome.errors),
        served=_served(outcome.served, server.workers, m.pids, kernel),
        counters=m.counters,
        drivers=tuple(outcome.drivers),
        wall_s=outcome.wall_s,
        title=title or default_title(server),
        work_estimate_us=work,
        evidence={**m.evidence, **({"accept_counts": kernel} if kernel else {})},
        interrupted=outcome.interrupted is not None,
    )
    if outcome.interrupted is not None:
        raise RunInterrupted([result], outcome.interrupted)
    return result


def _served(by_reply: dict[int, int], workers: int, pids: tuple[int, ...], kernel: dict[str, Any]) -> tuple[int, ...]:
    """Connections per worker: from the replies, or, for a server whose replies do not name the worker,
    from the kernel's accept counts (zeros, with the reason in the evidence, when those are unavailable)."""
    if not kernel:
        return tuple(by_reply.get(i, 0) for i in range(workers))
    counts = kernel.get("counts", {})
    return tuple(int(counts.get(pid, 0)) for pid in pids)


def run_each(variants: Sequence[T], run_one: Callable[[T], R]) -> list[R]:
    """Run every variant, one after another. Interrupted, the results so far travel with RunInterrupted
    (a partial last run included when its load kept one)."""
    results: list[R] = []
    for variant in variants:
        try:
            results.append(run_one(variant))
        except RunInterrupted as stop:
            raise RunInterrupted([*results, *stop.results], stop.cause) from None
        except KeyboardInterrupt as cause:
            if not results:
                raise
            raise RunInterrupted(results, cause) from None
    return results
