"""The breaking-point experiment (seed 002): step the offered load up until the server stops holding it.

One server, started once (lifecycle.py); against it, one step per offered load, each for a fixed
time: a fixed rate of new connections (open loop, the honest way to see queueing, as wrk2 does: each
connection is timed from when it was due) or a number of connections in flight (closed loop). A step holds
when nothing failed (or no more than --max-errors) and the tail stays under the bounds given. At each step
the kernel's counters (nstat-style deltas), a socket summary (ss -s-style), the listeners' queues and the
workers' and load generator's CPU are kept, so the first step that did not hold says why.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...core import environment
from ...core.errors import AcceptOrderError, PlanError
from ...core.hosts import ClientHosts
from ...core.protocol import ABORTED
from ...core.signals import deferred
from ...core.spec import (
    MAX_CONNECTIONS,
    MAX_DRIVER_PROCS,
    ConcurrentLoad,
    Driver,
    ServerSpec,
    check_concurrency,
    check_driver,
    check_range,
    sized,
)
from ...core.totals import loops_ran
from ...probes import netstat
from ...probes.listen_drops import DropsReading, dropped_between
from ...probes.listeners import drops_reading
from ...probes.sockets import socket_summary
from ...render.evidence import listener_drops_said, machine_busy
from ...render.text import plural
from ...servers.registry import elsewhere
from ..lifecycle import Measured, as_answered, lifecycle
from ..session import RunInterrupted, RunStopped, Tick, drive_load
from .result import RampResult, RampStep

SATURATED = 0.9  # a worker (or the workers together) on a CPU this share of the step is CPU-bound
CLIENT_PACED = "while the workers idled"  # said of a CPU-bound load generator: it set the step's pace
KEPT_RATE = 0.9  # an open-loop step that finished fewer than this share of what was offered did not keep up


@dataclass(frozen=True)
class RampPlan:
    rates: tuple[float, ...] = ()  # open loop: connections per second, one step each
    concurrencies: tuple[int, ...] = ()  # closed loop instead: connections in flight, one step each
    step_s: float = 2.0
    in_flight: int = 1000  # open loop: most connections the load generator keeps in flight
    p99_ms: float | None = None
    p999_ms: float | None = None
    max_errors: int = 0
    driver_procs: int = 2
    timeout_s: float = 5.0
    keep_going: bool = False  # run every step, past the first that did not hold
    load_cpus: tuple[int, ...] = ()  # the load generator's processes pinned to these CPUs (--load-cpus)
    # Kept connections (ConcurrentLoad's fields): each step's load carries K requests per connection (0: each
    # kept for the whole step; the rates then count requests), and a pool opens the step's connections (its
    # --in-flight, or its concurrency) one after another at idle before the requests run over them. Every step
    # is a load of its own: its connections, a pool too, are opened at its start and closed at its end.
    requests_per_connection: int = 1
    pool: bool = False
    client_hosts: ClientHosts | None = None  # --clients: each step is split across them (loads/hosts/)
    driver: Driver = "auto"  # the load generator's loop (loads/drivers.py)

    @property
    def keeps_connections(self) -> bool:
        return self.requests_per_connection != 1 or self.pool

    def validated(self) -> RampPlan:
        if bool(self.rates) == bool(self.concurrencies):
            raise PlanError("give --rates (open loop) or --concurrency-steps (closed loop), one of them")
        for rate in self.rates:
            check_range("--rates", rate, 0.1, 10_000_000)
        for c in self.concurrencies:  # checked here, before the server starts; per driver, as the load will
            check_range("--concurrency-steps", c, 1, 1_000_000)
            check_concurrency(c, "--concurrency-steps", max(1, min(self.driver_procs, c)))
        steps = self.offered
        if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):  # the knee is the last step held before
            name = "--rates" if self.rates else "--concurrency-steps"  # one that did not: read in rising order
            raise PlanError(f"{name} must rise step by step, got {','.join(f'{v:g}' for v in steps)}")
        if self.rates:
            check_concurrency(self.in_flight, "--in-flight", max(1, min(self.driver_procs, self.in_flight)))
        check_range("--requests-per-connection", self.requests_per_connection, 0, MAX_CONNECTIONS)
        check_range("--step", self.step_s, 0.1, 3600, "s")
        check_range("--driver-procs", self.driver_procs, 1, MAX_DRIVER_PROCS)
        check_driver(self.driver)
        check_range("--max-errors", self.max_errors, 0, 10**12)
        for name, bound in (("--p99", self.p99_ms), ("--p999", self.p999_ms)):
            if bound is not None:
                check_range(name, bound, 0.001, 3_600_000, "ms")
        return self

    @property
    def offered(self) -> list[float]:
        return list(self.rates) if self.rates else [float(c) for c in self.concurrencies]

    def load(self, offered: float) -> ConcurrentLoad:
        if self.rates:
            return ConcurrentLoad(
                connections=None,
                duration_s=self.step_s,
                concurrency=self.in_flight,
                driver_procs=self.driver_procs,
                timeout_s=self.timeout_s,
                rate=offered,
                cpus=self.load_cpus,
                requests_per_connection=self.requests_per_connection,
                pool=self.pool,
                clients=self.client_hosts,
                driver=self.driver,
            ).validated()
        return ConcurrentLoad(
            connections=None,
            duration_s=self.step_s,
            concurrency=int(offered),
            driver_procs=self.driver_procs,
            timeout_s=self.timeout_s,
            cpus=self.load_cpus,
            requests_per_connection=self.requests_per_connection,
            pool=self.pool,
            clients=self.client_hosts,
            driver=self.driver,
        ).validated()


def _cpu(pids: Sequence[int]) -> list[float]:
    """Each worker's CPU seconds so far: every thread's (process_usage), as latency's counters read them. The
    main thread's alone (usage) read Puma's workers, whose pool threads answer, at 0% for a step of 3,408
    requests a second of 0.2 ms each, and put their CPU on 'other processes'. A worker that is a thread (HAProxy's,
    h2o's: thread_workers) is read by its own, the main thread too: process_usage gave HAProxy's thread 0 every
    thread's, counting the others twice (0.56 s for a process's 0.35)."""
    from ...core.processes import process_errors, process_usage, thread_workers, usage

    seconds = []
    threads = thread_workers(pids)
    for pid in pids:
        try:
            seconds.append((usage if pid in threads else process_usage)(pid)[2])
        except process_errors(ValueError):
            seconds.append(0.0)
    return seconds


def machine_cpu() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs so far, from /proc/stat; None where there is none."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _queues(port: int, host: str) -> list[int]:
    """The accept queues of the server's listeners: on its port and its address (or a wildcard), not another
    process's socket on the same port (the evidence's listeners are chosen the same way)."""
    from ...probes.listeners import listening_sockets, serving_on

    try:
        return [int(row.queue) for row in serving_on(listening_sockets(port), host) if row.queue is not None]
    except (OSError, ValueError):
        return []


def _listener_drops(port: int, host: str, pids: Sequence[int]) -> DropsReading | None:
    """The handshake packets the server's own listeners have dropped so far (probes/listeners.drops_reading)."""
    return drops_reading(port, host, pids) if port else None


def _share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]), 4)


def _sampling(port: int, host: str, peaks: list[int], progress: Tick | None) -> Tick:
    """A tick that samples the listeners' queues while a step runs (after it, they have drained)."""

    def tick(done: int, elapsed: float) -> None:
        for i, q in enumerate(_queues(port, host) if port else []):
            if i < len(peaks):
                peaks[i] = max(peaks[i], q)
            else:
                peaks.append(q)
        if progress:
            progress(done, elapsed)

    return tick


def judge(step: RampStep, plan: RampPlan, workers: int) -> list[str]:
    """Why this step did not hold (empty: it held), then what else the kernel and the clocks say."""
    reasons: list[str] = []
    # a step Ctrl-C cut short counts its connections in flight as aborted: the stop's, not the server's failures
    stopped = step.errors.get(ABORTED, 0) if step.interrupted else 0
    if step.failed - stopped > plan.max_errors:
        # counted as latency and run count them ('200 × bad reply'): 'bad reply 200' read as an HTTP status
        by = ", ".join(f"{v} × {k}" for k, v in sorted(step.errors.items(), key=lambda kv: -kv[1]))
        reasons.append(f"{step.failed} failed ({by})")
    if plan.p99_ms is not None and step.p99_us is not None and step.p99_us > plan.p99_ms * 1000:
        reasons.append(f"p99 {step.p99_us / 1000:.1f} ms > {plan.p99_ms:g} ms")
    if plan.p999_ms is not None and step.p999_us is not None and step.p999_us > plan.p999_ms * 1000:
        reasons.append(f"p99.9 {step.p999_us / 1000:.1f} ms > {plan.p999_ms:g} ms")
    if step.kind == "rate" and step.driven < KEPT_RATE * (offered := step.offered_reported) * step.wall_s:
        to = f" to the client hosts that reported ({step.lost_hosts} lost)" if offered < step.offered else ""
        reasons.append(f"finished {step.driven / max(step.wall_s, 1e-9):.0f}/s of {offered:g}/s offered{to}")
    return reasons


def signals(step: RampStep, workers: int, cpus: int, coordinated: bool = False, kernel: str = "") -> list[str]:
    """What the kernel and the CPU counters saw during a step (said for every step; decisive for a knee).
    `coordinated`: the load went from client hosts to a server elsewhere, so this host's counters and CPUs
    are none of the step's; the server's listen counters count only where --observe-on brought them.
    `kernel`: this host's boot_id, which client hosts on this machine's CPUs report too (_client_cpus)."""
    seen = []
    counters = (step.server_counters or {}) if coordinated else step.counters
    seen += _overflows(step, counters.get("TcpExtListenOverflows", 0), coordinated)
    resets = counters.get("TcpEstabResets", 0) + counters.get("TcpExtTCPAbortOnData", 0)
    if resets:
        # The counters are the host's: a step of one request per connection whose every connection was answered
        # lost none to a reset (its client reads each reply to the end and closes without one), so they were
        # other traffic's, and a knee is not to be put down to them ('There: 12212 connections reset' beside 0
        # failed, helpers' tests). Kept connections are closed at the step's end, some maybe with a byte unread.
        theirs = "" if step.failed or step.connections else ", none of them this step's (it failed none)"
        seen.append(f"{plural(resets, 'connection')} reset host-wide{theirs}")
    busy = sum(step.worker_cpu)
    workers_bound = bool(step.worker_cpu) and (
        busy >= SATURATED * min(workers, cpus) or max(step.worker_cpu) >= SATURATED
    )
    if workers_bound:
        seen.append(f"workers on a CPU {100 * busy / min(workers, cpus):.0f}% of the time")
    if step.machine_cpu is not None and step.machine_cpu >= SATURATED and not coordinated:
        # without the workers' CPU (a server of the remote kind) the load generator's alone is known: no 'own 0%'
        read = bool(step.worker_cpu)
        seen.append(machine_busy(step.machine_cpu, busy + _client_cpus(step, kernel), cpus, server_read=read))
    if step.driver_cpu >= SATURATED:
        text = f"load generator CPU-bound ({100 * step.driver_cpu:.0f}% of a CPU per process)"
        if step.worker_cpu and not workers_bound:  # the server waited for its client
            text += f" {CLIENT_PACED}: this step's figures are partly the client's"
        seen.append(text)
    peak: int = max(step.queues, default=0)
    if peak:
        seen.append(f"up to {plural(peak, 'connection')} waited in an accept queue")
    return seen


def _overflows(step: RampStep, overflows: int, coordinated: bool) -> list[str]:
    """The accept queue's overflows: the server's own listeners' drops where read (ListenOverflows is the whole
    network namespace's: another program's listener overflowing beside a ramp at 100/s read 'the accept queue
    overflowed 154 times' of a server whose queue never held more than 2), else the namespace's counter."""
    own = None if coordinated else step.listener_drops
    if own:
        return [f"the accept queue overflowed: {listener_drops_said(own)}"]
    if own == 0 and overflows:
        return [f"ListenOverflows +{overflows} host-wide, none of them the server's (its listeners dropped none)"]
    if own is None and overflows:
        return [f"the accept queue overflowed {'once' if overflows == 1 else f'{overflows} times'}"]
    return []


def _client_cpus(step: RampStep, kernel: str = "") -> float:
    """The load generator's CPU over the step on this machine's CPUs, in CPUs (its CPU per connection times
    connections finished); over client hosts (--clients), the drivers of those whose kernel is this one
    (`kernel`, the boot_id: localhost, a network namespace, a container), none of the others'."""
    if step.hosts:
        shared = [d.cpu_s for h in step.hosts if kernel and h.boot_id == kernel for d in h.drivers]
        return sum(shared) / max(step.wall_s, 1e-9)
    return (step.client_cpu_us or 0.0) * step.driven / 1e6 / max(step.wall_s, 1e-9)


def run_ramp(server: ServerSpec, plan: RampPlan, on_step: Callable[[float], Tick | None] | None = None) -> RampResult:
    """Every step of `plan` against one server, up to the first that did not hold (or all: keep_going). Ctrl-C
    or SIGTERM after a step: RunInterrupted with the steps so far; an error after one (a client host lost, a
    driver that could not start, a worker that died): RunStopped with them, the result saying why."""
    plan = plan.validated()
    server = server.validated()
    steps: list[RampStep] = []
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    kernel = environment.boot_id()  # client hosts that report it ran on these CPUs

    def drive(target: Any) -> None:
        for offered in plan.offered:
            load = plan.load(offered)
            peaks: list[int] = []  # the listeners' accept queues, the longest seen at each one
            remote = elsewhere(target)
            here = remote is None  # a server elsewhere: its queues and CPU are not visible from here
            port = target.address[1] if here else 0
            tick = _sampling(port, server.host, peaks, on_step(offered) if on_step else None)
            counters_before = netstat.read_counters()
            drops_before = _listener_drops(port, server.host, target.pids) if here else None
            cpu_before = _cpu(list(target.pids) if here else [])
            machine_before = machine_cpu()
            outcome = drive_load(target, load, server.workers, tick)
            # The step's load has finished: a signal while its counters, sockets and CPU are read must not
            # lose it. It is raised once the step is kept (the run then ends with the steps so far).
            with deferred():
                sockets = socket_summary()
                cpu_after = _cpu(list(target.pids) if here else [])
                machine_after = machine_cpu()
                counters_after = netstat.read_counters()
                drops_after = _listener_drops(port, server.host, target.pids) if here else None
                moved = netstat.counter_deltas(counters_before, counters_after, sorted(counters_after))
                # the workers' CPU was read around the pool's fill too, not only the step's time (wall_s)
                wall = max(outcome.wall_s + (outcome.pool_fill_s or 0.0), 1e-9)
                step = RampStep(
                    kind="rate" if plan.rates else "concurrency",
                    offered=offered,
                    wall_s=outcome.wall_s,
                    served=outcome.served,
                    errors=dict(outcome.errors),
                    p50_us=outcome.percentile_us(50),
                    p99_us=outcome.percentile_us(99),
                    p999_us=outcome.percentile_us(99.9),
                    max_us=outcome.max_us,
                    counters={k: v for k, v in moved.items() if v},
                    sockets=sockets,
                    queues=tuple(peaks),
                    worker_cpu=tuple(round((a - b) / wall, 4) for a, b in zip(cpu_after, cpu_before, strict=False)),
                    driver_cpu=round(max((d.cpu_fraction for d in outcome.drivers), default=0.0), 4),
                    machine_cpu=_share(machine_before, machine_after),
                    client_cpu_us=outcome.client_cpu_us,
                    loop=loops_ran(outcome.drivers) or None,
                    interrupted=outcome.interrupted,
                    connections=outcome.connections,
                    hosts=outcome.hosts,
                    pool=outcome.pool,
                    pool_fill_s=outcome.pool_fill_s,
                    observed_on=tuple(dict(o) for o in outcome.observed),
                    through_here=bool(outcome.hosts) and remote is not None and remote.through_here,
                    listener_drops=dropped_between(drops_before, drops_after),
                )
                coordinated = not here and bool(step.hosts) and not step.through_here
                seen = signals(step, server.workers, cpus, coordinated=coordinated, kernel=kernel)
                step = step.judged(judge(step, plan, server.workers), seen)
                steps.append(step)
            if outcome.interruption is not None:
                raise outcome.interruption
            if step.reasons and not plan.keep_going:
                return

    def build(_: None, m: Measured) -> RampResult:
        shortages = tuple(m.evidence.get("shortages", ()))
        # Over kept connections, the requests each worker says it answered over all the steps: the witness of
        # the replies' count (left out where a worker does not count them: a launched server's)
        own = tuple(c.requests for c in sorted(m.counters, key=lambda c: c.index) if c.requests is not None)
        own = own if plan.keeps_connections and len(own) == len(m.counters) else ()
        return RampResult(
            as_answered(server, len(m.pids)),
            plan_dict(plan),
            tuple(steps),
            m.environment,
            shortages=shortages,
            worker_requests=own,
        )

    started = environment.current()  # for steps a signal or an error keeps: the machine they ran on
    try:
        in_flight = plan.in_flight if plan.rates else max(plan.concurrencies)
        described = lambda: f"after {len(steps)} of {len(plan.offered)} steps"  # noqa: E731
        return lifecycle(sized(server, in_flight, plan.keeps_connections), drive, described, build)
    except RunInterrupted:
        raise  # after the last step: the whole result travels with it
    except KeyboardInterrupt as stop:
        if steps:
            answered = as_answered(server, max(len(s.served) for s in steps))
            raise RunInterrupted([RampResult(answered, plan_dict(plan), tuple(steps), started, True)], stop) from None
        raise
    except AcceptOrderError as error:
        if steps:  # the steps before the one that failed are whole: kept, and the error said after them
            answered = as_answered(server, max(len(s.served) for s in steps))
            kept = RampResult(answered, plan_dict(plan), tuple(steps), started, stopped=str(error))
            raise RunStopped([kept], error) from error
        raise


def plan_dict(plan: RampPlan) -> dict[str, Any]:
    from dataclasses import asdict

    data = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(plan).items()}
    if data["requests_per_connection"] == 1:  # a ramp of one request per connection: its file as before
        del data["requests_per_connection"]
    if not data["pool"]:
        del data["pool"]
    if data["driver"] == "auto":  # as 0.2 wrote it
        del data["driver"]
    data.pop("client_hosts")  # asdict's copy: saved as the hosts say it, or not at all (a ramp driven from here)
    if plan.client_hosts is not None:
        data["client_hosts"] = plan.client_hosts.to_dict()
    return data
