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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...core import environment
from ...core.cgroup_cpu import cgroup_cpu, throttled
from ...core.errors import AcceptOrderError
from ...core.signals import deferred
from ...core.spec import ServerSpec, sized
from ...core.totals import loops_ran
from ...probes import netstat
from ...probes.listen_drops import DropsReading, dropped_between
from ...probes.listeners import drops_reading
from ...probes.sockets import socket_summary
from ...servers.registry import elsewhere
from ..lifecycle import Measured, as_answered, lifecycle
from ..session import RunInterrupted, RunStopped, Tick, drive_load
from .plan import RampPlan, plan_dict
from .result import RampResult, RampStep
from .step_verdict import judge, signals

# the plan (plan.py) and the step's verdict (step_verdict.py) are their own modules; run_ramp reads judge, signals,
# machine_cpu, socket_summary and the counters through this module's names, which tests replace


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


def _counters_reader(target: Any, from_hosts: bool) -> tuple[Callable[[], Mapping[str, int]], bool]:
    """How the step's kernel counters are read, and whether they are the server's network namespace's: ours for a
    server here; a --target's namespace where it is one of this machine's (servers/remote.py counters_reader); else
    ours, which are then the client's, not the server's. From client hosts (`from_hosts`), ours: a coordinator's,
    which the report says are none of the step's (report.coordinated)."""
    remote = elsewhere(target)
    read = None if remote is None or from_hosts else remote.counters_reader()
    if read is not None:
        return netstat.or_empty(read), True  # {} once its namespace's processes are gone: the step said unread
    return netstat.read_counters, remote is None


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
            read_counters, server_read = _counters_reader(target, bool(load.clients and load.clients.destinations))
            counters_before = read_counters()
            drops_before = _listener_drops(port, server.host, target.pids) if here else None
            cpu_before = _cpu(list(target.pids) if here else [])
            machine_before = machine_cpu()
            limit_before = cgroup_cpu()  # a container's CPU limit: its throttle is the run's cap, not others'
            outcome = drive_load(target, load, server.workers, tick)
            # The step's load has finished: a signal while its counters, sockets and CPU are read must not
            # lose it. It is raised once the step is kept (the run then ends with the steps so far).
            with deferred():
                sockets = socket_summary()
                cpu_after = _cpu(list(target.pids) if here else [])
                machine_after = machine_cpu()
                held_off = throttled(limit_before, cgroup_cpu())
                counters_after = read_counters()
                drops_after = _listener_drops(port, server.host, target.pids) if here else None
                moved = netstat.counter_deltas(counters_before, counters_after, sorted(counters_after))
                # a server elsewhere driven from here: ours are the client's (with --clients, a coordinator's: said)
                unread = not (server_read and counters_before and counters_after) and not outcome.hosts
                moved = {} if unread else moved
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
                    counters_netns=not (unread or outcome.hosts or remote is None or remote.located.ours),
                    sockets=sockets,
                    queues=tuple(peaks),
                    worker_cpu=tuple(round((a - b) / wall, 4) for a, b in zip(cpu_after, cpu_before, strict=False)),
                    driver_cpu=round(max((d.cpu_fraction for d in outcome.drivers), default=0.0), 4),
                    machine_cpu=_share(machine_before, machine_after),
                    throttled_ms=None if held_off is None else round(held_off[0], 1),
                    cpu_limit=None if held_off is None else held_off[1],
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
                    server_unread=unread,
                    unnamed=outcome.unnamed,
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
            counters_landed=m.evidence.get("counters_landed"),
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
