"""Latency under load: CPU-bound workers, a closed-loop load, mmhistogram-style results.

This reproduces two seed experiments. Seed 000: with the same total work, one shared accept queue
(`blocking`, `epoll`) gives a tight latency distribution while SO_REUSEPORT (`reuseport`, one queue per
worker chosen by a hash, whether or not that worker is busy) spreads it wide. Seed 001: capping how
many connections a worker accepts per wakeup (`accept_batch`, nginx's multi_accept, DragonFly's
kern.ipc.soavailconn) changes average and tail latency.

API: `make_latency_plan(...)` -> LatencyPlan, `run_latency(plan)` -> LatencyResult,
`compare_latency(plan, modes)`, `sweep_accept_batch(plan, values)`, `tail_verdict(results)`.
Renderers for the result kinds "latency", "latency-compare" and "sweep" are registered with
`report.register_renderer`, so `accept-order show` prints saved results as the commands did.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from . import api, environment, report
from .errors import PlanError
from .evidence import EvidenceCapture, evidence_report
from .histogram import LatencyHistogram, histogram_lines, summary_line
from .kernel import format_cpu_list
from .loadgen import (
    DEFAULT_PROCS,
    STARVED,
    DriverStats,
    RequestTotals,
    check_concurrency,
    describe_error,
    driver_warnings,
    run_load,
)
from .modes import require_mode, split_available
from .records import Environment, Plan, WorkerCounters
from .supervisor import WorkerPool
from .worker import spin

DEFAULT_REQUESTS = 100_000
DEFAULT_CONCURRENCY = 200
DEFAULT_TIMEOUT_S = 10.0
MAX_DRIVER_PROCS = 64
MAX_DURATION_S = 24 * 3600.0
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


# -- the plan ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatencyPlan:
    """The server (a Plan: mode, workers, work, accept_batch, cpus, timeout_s...) and the load."""

    server: Plan
    requests: int | None = DEFAULT_REQUESTS  # None: run for duration_s instead
    duration_s: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    driver_procs: int = DEFAULT_PROCS

    @property
    def mode(self) -> str:
        return self.server.mode

    def with_server(self, **changes: Any) -> LatencyPlan:
        return dataclasses.replace(self, server=dataclasses.replace(self.server, **changes))

    def load_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "duration_s": self.duration_s,
            "concurrency": self.concurrency,
            "driver_procs": self.driver_procs,
        }

    @classmethod
    def from_dicts(cls, plan: dict[str, Any], load: dict[str, Any]) -> LatencyPlan:
        return cls(
            server=Plan.from_dict(plan),
            requests=load.get("requests"),
            duration_s=load.get("duration_s"),
            concurrency=load.get("concurrency", DEFAULT_CONCURRENCY),
            driver_procs=load.get("driver_procs", DEFAULT_PROCS),
        )


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|µs|ms|s|m|h)?\s*$")
_UNIT_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> float:
    """`"10s"`, `"500ms"`, `"2m"`, `"1.5h"`, `"30"` (seconds) -> seconds. ValueError otherwise."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration such as 10s, 500ms or 2m")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    if not seconds > 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds


def allowed_cpus() -> list[int]:
    """CPUs this process may run on (what `--pin` spreads workers over)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def make_latency_plan(
    *,
    requests: int | None = None,
    duration_s: float | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    driver_procs: int = DEFAULT_PROCS,
    pin: bool = False,
    workers: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    **server: Any,
) -> LatencyPlan:
    """A validated LatencyPlan. Default: one worker per CPU, 100000 requests, 200 concurrent.

    `pin` pins worker i to the i-th allowed CPU (like nginx's worker_cpu_affinity auto) unless `cpus`
    names the CPUs. Every bad value raises PlanError naming the option, before anything starts.
    """
    if requests is not None and duration_s is not None:
        raise PlanError("give --requests or --duration, not both")
    if requests is None and duration_s is None:
        requests = DEFAULT_REQUESTS
    if requests is not None:
        api._check_range("--requests", requests, 1, api.MAX_CONNECTIONS)
    if duration_s is not None and not 0 < duration_s <= MAX_DURATION_S:
        raise PlanError(f"--duration must be more than 0 and at most 24h, got {duration_s:g} s")
    api._check_range("--driver-procs", driver_procs, 1, MAX_DRIVER_PROCS)
    check_concurrency(concurrency)
    cpus = tuple(server.pop("cpus", None) or ())
    allowed = allowed_cpus()
    if pin and not cpus:
        cpus = tuple(allowed)
    foreign = sorted(set(cpus) - set(allowed))
    if foreign:
        raise PlanError(
            f"--cpus {format_cpu_list(foreign)} not available here; this process may use CPUs "
            f"{format_cpu_list(allowed)}"
        )
    if workers is None:
        workers = len(allowed)
    plan = api.make_plan(
        workers=workers,
        connections=requests or 1,  # the server plan's count mirrors the load's; 1 for duration runs
        timeout_s=timeout_s,
        settle=False,  # settling between connections is for the ordering experiments, not a load
        cpus=cpus,
        **server,
    )
    # As many drivers as will run: the load generator starts none without a slot and a request.
    driver_procs = min(driver_procs, concurrency, requests or driver_procs)
    return LatencyPlan(plan, requests, duration_s, concurrency, driver_procs)


# -- the result --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatencyResult(RequestTotals):
    """One latency run: plan, where, the exact duration histogram, failures, per-worker and per-driver."""

    plan: LatencyPlan
    environment: Environment
    port: int
    histogram: LatencyHistogram  # served requests' durations, integer microseconds
    errors: dict[str, int]  # failed requests by errno name (or timeout / no reply / bad reply)
    served: tuple[int, ...]  # requests answered per worker index
    counters: tuple[WorkerCounters, ...]
    drivers: tuple[DriverStats, ...]
    wall_s: float  # of the load, first request to last
    title: str = ""
    work_estimate_us: float | None = None  # the handler's busy loop, timed in this process before the run
    evidence: dict[str, Any] = field(default_factory=dict)  # kernel evidence, filled by `serving`

    def percentile_ms(self, q: float) -> float | None:
        return self.histogram.percentile(q) / 1000 if self.ok else None

    def summary(self) -> dict[str, float | int | None]:
        """The figures the reports show, in milliseconds (None when nothing was served)."""
        h = self.histogram
        if not h.count:
            return {"count": 0}
        return {
            "count": h.count,
            "min_ms": (h.min_us or 0) / 1000,
            "avg_ms": h.mean_us / 1000,
            "med_ms": h.median_us() / 1000,
            **{f"p{q:g}_ms": h.percentile(q) / 1000 for q in PERCENTILES},
            "max_ms": (h.max_us or 0) / 1000,
            "dev_ms": h.stdev_us / 1000,
            "throughput": self.throughput,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": asdict(self.plan.server),
            "load": self.plan.load_dict(),
            "environment": asdict(self.environment),
            "port": self.port,
            "wall_s": self.wall_s,
            "title": self.title,
            "summary": self.summary(),  # derived, for other tools; ignored when read back
            "histogram": self.histogram.to_dict(),
            "errors": dict(self.errors),
            "served": list(self.served),
            "counters": [asdict(c) for c in self.counters],
            "drivers": [d.to_dict() for d in self.drivers],
            "work_estimate_us": self.work_estimate_us,
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LatencyResult:
        return cls(
            plan=LatencyPlan.from_dicts(data["plan"], data.get("load", {})),
            environment=Environment.from_dict(data["environment"]),
            port=data["port"],
            histogram=LatencyHistogram.from_dict(data["histogram"]),
            errors=dict(data.get("errors", {})),
            served=tuple(data.get("served", ())),
            counters=tuple(WorkerCounters.from_dict(c) for c in data.get("counters", ())),
            drivers=tuple(DriverStats.from_dict(d) for d in data.get("drivers", ())),
            wall_s=data.get("wall_s", 0.0),
            title=data.get("title", ""),
            work_estimate_us=data.get("work_estimate_us"),
            evidence=data.get("evidence", {}),
        )


def load_notes(results: Sequence[LatencyResult]) -> list[Text]:
    """What to say about the load generator over runs with the same settings, each thing once: that it
    was CPU-bound or starved (yellow), else, when it shares the CPUs with the workers, that it does and
    how long it waited for a CPU (its wait is part of every latency; the seed's client had its own box)."""
    if not results:
        return []
    first = results[0]
    procs, workers, cpus = first.plan.driver_procs, first.plan.server.workers, first.environment.cpu_count
    drivers = [d for r in results for d in r.drivers]
    warnings = list(dict.fromkeys(driver_warnings(drivers, workers, cpus, procs=procs)))
    notes = [Text(f"Note: {w}", style="yellow") for w in warnings]
    waits = [(d.runqueue_s or 0) / d.wall_s for d in drivers if d.wall_s and d.runqueue_s is not None]
    if procs + workers > cpus and not any(w > STARVED for w in waits):  # else a warning said it
        wait = f"; they waited for a CPU at most {100 * max(waits):.0f}% of their time" if waits else ""
        notes.append(
            Text(
                f"The load generator's {procs} processes run on the same {cpus} CPUs as the {workers} "
                f"workers{wait}; that wait is part of the measured latencies.",
                style="dim",
            )
        )
    return notes


# -- running -----------------------------------------------------------------------------------------


@dataclass
class Serving:
    """The running workers of one latency run. End them with `stop()`, which returns their counters."""

    pool: WorkerPool
    evidence: dict[str, Any] = field(default_factory=dict)  # becomes LatencyResult.evidence
    capture: EvidenceCapture | None = None  # set by `serving`

    def stop(self) -> list[WorkerCounters]:
        if self.capture is not None:  # listeners, affinities and counter deltas, workers still alive
            self.evidence.update(self.capture.after(self.pool.port, self.pool.pids))
        return self.pool.stop()


@contextmanager
def serving(plan: Plan) -> Iterator[Serving]:
    """Start the workers of a latency run. Every latency run (single, compare, sweep) starts its workers
    here and stops them with `Serving.stop`, and nowhere else, so a before/after capture of the kernel's
    evidence (netstat counters, listening sockets) is added in this one place."""
    capture = EvidenceCapture(host=plan.host)
    capture.before()  # counters before any worker exists
    with WorkerPool(plan) as pool:
        capture.listeners(pool.port, "start")
        yield Serving(pool, capture=capture)


def estimate_work_us(plan: Plan, sample_iters: int = 300_000) -> float | None:
    """What one request's busy loop costs here: work_us plus the timed cost of work_iters (best of 3
    on a sample, scaled), so a run with `--work-iters` can say how much CPU that is on this machine."""
    if not plan.work_iters:
        return None
    n = min(plan.work_iters, sample_iters)
    best = math.inf
    for _ in range(3):
        t = time.perf_counter_ns()
        spin(0, n)
        best = min(best, time.perf_counter_ns() - t)
    return plan.work_us + best / 1000 * plan.work_iters / n


Tick = Callable[[int, float], None]


def default_title(plan: LatencyPlan, sweep: bool = False) -> str:
    if sweep:
        batch = plan.server.accept_batch
        return f"Duration in ms ({plan.mode}, accept-batch {batch if batch else 'no limit'})"
    return f"Duration in ms ({plan.mode})"


def run_latency(plan: LatencyPlan, on_tick: Tick | None = None, title: str | None = None) -> LatencyResult:
    """Start the workers, drive the closed-loop load, stop, and return what both sides measured.
    `on_tick(done, elapsed_s)` is called about every 0.1 s (for a progress bar)."""
    server = plan.server
    require_mode(server.mode)
    env = environment.current()
    work = estimate_work_us(server)
    with serving(server) as srv:
        pool = srv.pool

        def tick(done: int, elapsed: float) -> None:
            pool.check_alive()  # a dead worker ends the run with its name, not with a pile of timeouts
            if on_tick:
                on_tick(done, elapsed)

        load = run_load(
            pool.address,
            requests=plan.requests,
            duration_s=plan.duration_s,
            concurrency=plan.concurrency,
            procs=plan.driver_procs,
            timeout_s=server.timeout_s,
            on_tick=tick,
        )
        pool.check_alive()
        counters = srv.stop()
        pool.check_stopped()  # a worker that died at the very end must not pass for one that idled
        port = pool.port
    return LatencyResult(
        plan=plan,
        environment=env,
        port=port,
        histogram=load.histogram,
        errors=dict(load.errors),
        served=tuple(load.served.get(i, 0) for i in range(server.workers)),
        counters=tuple(counters),
        drivers=tuple(load.drivers),
        wall_s=load.wall_s,
        title=title or default_title(plan),
        work_estimate_us=work,
        evidence=srv.evidence,
    )


def compare_latency(
    plan: LatencyPlan,
    modes: Sequence[str],
    on_run: Callable[[LatencyPlan], Tick | None] | None = None,
) -> tuple[list[LatencyResult], dict[str, str]]:
    """Run `plan` once per mode, one after the other, same settings. Returns (results, skipped: mode ->
    why this machine cannot run it). `on_run(plan)` may return an on_tick for that run."""
    available, skipped = split_available(modes)
    results = []
    for name in available:
        run_plan = plan.with_server(mode=name)
        results.append(run_latency(run_plan, on_run(run_plan) if on_run else None))
    return results, skipped


def parse_batches(text: str) -> list[int]:
    """`"1,4,32,0"` -> [1, 4, 32, 0] (0: no cap); PlanError otherwise."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise PlanError(
            f"--accept-batch must be a list of whole numbers such as 1,4,32,0, got {text!r}"
        ) from None
    if not values or any(v < 0 for v in values):
        raise PlanError(f"--accept-batch must be a list of numbers >= 0 (0: no cap), got {text!r}")
    for value in values:  # every value before the first run, not when the sweep reaches it
        api._check_range("--accept-batch", value, 0, api.MAX_ACCEPT_BATCH)
    return values


def sweep_accept_batch(
    plan: LatencyPlan,
    values: Sequence[int],
    on_run: Callable[[LatencyPlan], Tick | None] | None = None,
) -> list[LatencyResult]:
    """One latency run per accepts-per-wakeup cap, the seed-001 experiment."""
    results = []
    for value in values:
        run_plan = plan.with_server(accept_batch=value)
        api._check_range("--accept-batch", value, 0, 1 << 20)
        results.append(
            run_latency(run_plan, on_run(run_plan) if on_run else None, default_title(run_plan, sweep=True))
        )
    return results


# -- verdict -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TailVerdict:
    """Which mode had the tighter tail, and by how much (ratios of the others to it)."""

    tightest: str | None
    ratios: dict[str, dict[str, float]]  # mode -> {"p99": r, "dev": r, "avg": r} relative to tightest
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


CLEAR = 1.1  # tails within 10% of each other are no clear difference on a noisy machine


def _ratio(a: float, b: float) -> float:
    if b > 0:
        return a / b
    return 1.0 if a == 0 else math.inf


def tail_verdict(results: Sequence[LatencyResult]) -> TailVerdict:
    """The run with the smallest p99 (then deviation) and how the others compare: p99, dev, avg ratios."""
    runs = [r for r in results if r.ok]
    if len(runs) < 2:
        return TailVerdict(None, {}, "need at least two runs that served requests to compare tails")

    def key(r: LatencyResult) -> tuple[int, float]:
        return r.histogram.percentile(99), r.histogram.stdev_us

    best = min(runs, key=key)
    bh = best.histogram
    ratios: dict[str, dict[str, float]] = {}
    clauses = []
    for r in runs:
        if r is best:
            continue
        h = r.histogram
        rat = {
            "p99": _ratio(h.percentile(99), bh.percentile(99)),
            "dev": _ratio(h.stdev_us, bh.stdev_us),
            "avg": _ratio(h.mean_us, bh.mean_us),
        }
        ratios[r.plan.mode] = rat
        clauses.append(
            f"{r.plan.mode}'s p99 is {rat['p99']:.2f}× ({h.percentile(99) / 1000:.2f} vs "
            f"{bh.percentile(99) / 1000:.2f} ms) and its deviation {rat['dev']:.2f}× "
            f"({h.stdev_us / 1000:.2f} vs {bh.stdev_us / 1000:.2f} ms); average {rat['avg']:.2f}× "
            f"({h.mean_us / 1000:.2f} vs {bh.mean_us / 1000:.2f} ms)"
        )
    if all(r["p99"] < CLEAR and r["dev"] < CLEAR for r in ratios.values()):
        text = f"no clear difference in the tails (all within {100 * (CLEAR - 1):.0f}%): " + "; ".join(
            clauses
        )
        return TailVerdict(None, ratios, text)
    text = f"{best.plan.mode} has the tightest tail: " + "; ".join(clauses)
    return TailVerdict(best.plan.mode, ratios, text)


# -- renderers (pure) --------------------------------------------------------------------------------


class Verbatim:
    """Lines printed exactly as given: never wrapped or re-flowed (mmhistogram output must stay
    byte-comparable with the seed's). Printed with crop=False they are not cut at the console width."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            yield Segment(line)
            yield Segment.line()


def mmhistogram_lines(result: LatencyResult) -> list[str]:
    title = result.title or default_title(result.plan)
    return [summary_line(title, result.histogram), *histogram_lines(title, result.histogram)]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _work_text(plan: Plan, estimate_us: float | None) -> str:
    parts = []
    if plan.work_us:
        parts.append(f"{plan.work_us} µs")
    if plan.work_iters:
        cost = f" ≈ {estimate_us / 1000:.2f} ms here" if estimate_us else ""
        parts.append(f"{plan.work_iters} loop iterations{cost}")
    return "work " + (" + ".join(parts) + " busy loop" if parts else "none")


def _load_text(plan: LatencyPlan) -> str:
    amount = f"{plan.requests} requests" if plan.requests is not None else f"{plan.duration_s:g} s"
    return f"{amount}, {plan.concurrency} concurrent, {plan.driver_procs} driver processes"


def _workers(n: int) -> str:
    return f"{n} worker" if n == 1 else f"{n} workers"


def _env_text(env: Environment) -> str:
    return f"{env.system} {env.kernel}, {env.cpu_count} CPUs"


def _group_headline(command: str, first: LatencyResult, mode: str) -> Text:
    """The first line of a report over several runs that share everything but what they vary."""
    server = first.plan.server
    return Text.assemble(
        (command, "bold"),
        f": {mode}{_workers(server.workers)}, {_work_text(server, first.work_estimate_us)}; "
        f"{_load_text(first.plan)} ({_env_text(first.environment)})",
    )


def headline(result: LatencyResult) -> Text:
    plan, env = result.plan, result.environment
    server = plan.server
    batch = f", accept-batch {server.accept_batch}" if server.accept_batch else ""
    pinned = f", pinned to CPUs {format_cpu_list(server.cpus)}" if server.cpus else ""
    return Text.assemble(
        ("accept-order latency", "bold"),
        f": mode {server.mode}, {_workers(server.workers)}{pinned}, "
        f"{_work_text(server, result.work_estimate_us)}{batch}; {_load_text(plan)}; "
        f"{server.host}:{result.port} ({_env_text(env)})",
    )


def percentile_table(result: LatencyResult) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for q in PERCENTILES:
        table.add_column(f"p{q:g} ms", justify="right")
    for name in ("req/s", "served", "errors", "wall s"):
        table.add_column(name, justify="right")
    table.add_row(
        *[_ms(result.percentile_ms(q)) for q in PERCENTILES],
        f"{result.throughput:.0f}",
        str(result.ok),
        Text(str(result.failed), style="bold red" if result.failed else ""),
        f"{result.wall_s:.2f}",
    )
    return table


def errors_block(errors: dict[str, int], total: int) -> Text | None:
    if not errors:
        return None
    failed = sum(errors.values())
    text = Text(f"{failed} of {total} requests failed:\n", style="bold red")
    for name, n in sorted(errors.items(), key=lambda kv: -kv[1]):
        text.append(f"  {n} × {describe_error(name)}\n")
    return text


def affinity_lines(counters: Sequence[WorkerCounters]) -> list[str]:
    """The workers' CPU affinity in `taskset -cp PID` form, the seed's check of worker_cpu_affinity."""
    return [f"pid {c.pid}'s current affinity list: {format_cpu_list(c.affinity) or '?'}" for c in counters]


def drivers_text(drivers: Sequence[DriverStats]) -> Text:
    parts = [
        f"{d.index}: {d.requests} req, {100 * d.cpu_fraction:.0f}% CPU"
        + (
            f", {100 * (d.runqueue_s or 0) / d.wall_s:.0f}% waiting for one"
            if d.runqueue_s is not None
            else ""
        )
        for d in drivers
        if d.wall_s
    ]
    return Text("drivers: " + "; ".join(parts), style="dim")


def latency_report(result: LatencyResult) -> RenderableType:
    parts: list[RenderableType] = [
        headline(result),
        Verbatim(mmhistogram_lines(result)),
        percentile_table(result),
        report.worker_table(result.counters, result.served, title="served per worker", detail=False),
        Verbatim(affinity_lines(result.counters)),
        drivers_text(result.drivers),
    ]
    if result.evidence:
        parts.append(evidence_report(result.evidence))
    errors = errors_block(result.errors, result.requests)
    if errors:
        parts.append(errors)
    parts.extend(load_notes([result]))
    return Group(*parts)


COMPARE_COLUMNS = (
    ("min", "min_ms"),
    ("avg", "avg_ms"),
    ("med", "med_ms"),
    ("p90", "p90_ms"),
    ("p99", "p99_ms"),
    ("p99.9", "p99.9_ms"),
    ("max", "max_ms"),
    ("dev", "dev_ms"),
)


def compare_lines(results: Sequence[LatencyResult]) -> list[str]:
    """The side-by-side table, as fixed-width text: it is wider than 80 columns and must not be cut."""
    width = max([len("mode"), *(len(r.plan.mode) for r in results)])
    head = f"{'mode':<{width}}" + "".join(f"{name:>9}" for name, _ in COMPARE_COLUMNS)
    lines = [head + f"{'req/s':>9}{'errors':>8}  served per worker", "-" * (len(head) + 36)]
    for r in results:
        s = r.summary()
        cells = "".join(f"{_ms(s.get(key)):>9}" for _, key in COMPARE_COLUMNS)
        served = " ".join(map(str, r.served))
        lines.append(f"{r.plan.mode:<{width}}{cells}{r.throughput:>9.0f}{r.failed:>8}  {served}")
    return lines


def compare_report(
    results: Sequence[LatencyResult], skipped: dict[str, str], verdict: TailVerdict | None = None
) -> RenderableType:
    verdict = verdict or tail_verdict(results)
    parts: list[RenderableType] = []
    if results:
        first = results[0]
        parts.append(_group_headline("accept-order latency --compare", first, ""))
    for r in results:
        parts.append(Verbatim(mmhistogram_lines(r)))
        errors = errors_block(r.errors, r.requests)
        if errors:
            parts.append(errors)
    parts.append(Text("latency by mode (ms)", style="bold"))
    parts.append(Verbatim(compare_lines(results)))
    for mode, reason in skipped.items():
        parts.append(Text(f"{mode}: not available: {reason}", style="dim"))
    parts.extend(load_notes(results))
    parts.append(Text.assemble(("Verdict: ", "bold"), verdict.text))
    return Group(*parts)


def sweep_lines(results: Sequence[LatencyResult]) -> list[str]:
    """Seed 001's table: cap, throughput, average, deviation and p99 latency, plus the largest batch a
    worker actually accepted in one wakeup and the mean accepts per wakeup (from the workers' counters)."""
    header = (
        f"{'':>9}|{'performance':>14} |{'lat-avg':>9} |{'lat-stdev':>10} |{'lat-99%':>9} |"
        f"{'max/wakeup':>11} |{'avg/wakeup':>11}"
    )
    rule = "+".join("-" * len(col) for col in header.split("|"))
    lines = [header, rule]
    for r in results:
        batch = r.plan.server.accept_batch
        label = f"{batch} limit" if batch else "no limit"
        returns = sum(c.returns - c.empty for c in r.counters)
        accepts = sum(c.accepts for c in r.counters)
        s = r.summary()
        lat = [f"{s[k]:.2f}ms" if s.get(k) is not None else "-" for k in ("avg_ms", "dev_ms", "p99_ms")]
        lines.append(
            f"{label:<9}|{r.throughput:>11.2f}tps |{lat[0]:>9} |{lat[1]:>10} |{lat[2]:>9} |"
            f"{max((c.max_batch for c in r.counters), default=0):>11} |"
            f"{(accepts / returns if returns else 0):>11.2f}"
        )
        lines.append(rule)
    return lines


def sweep_report(results: Sequence[LatencyResult]) -> RenderableType:
    if not results:
        return Text("no sweep runs")
    first = results[0]
    server = first.plan.server
    parts: list[RenderableType] = [
        _group_headline("accept-order sweep --accept-batch", first, f"mode {server.mode}, ")
    ]
    for r in results:
        parts.append(Verbatim(mmhistogram_lines(r)))
    parts.append(Verbatim(sweep_lines(results)))
    parts.append(
        Text(
            "tps: served requests per second; max/wakeup: most connections one worker accepted in one "
            "wakeup (never above the cap); avg/wakeup: accepts per non-empty wakeup",
            style="dim",
        )
    )
    if server.mode == "blocking":
        parts.append(
            Text("Note: blocking accept() takes one connection per call whatever the cap.", style="yellow")
        )
    for r in results:
        errors = errors_block(r.errors, r.requests)
        if errors:
            parts.append(Text(f"accept-batch {r.plan.server.accept_batch}: ", style="bold"))
            parts.append(errors)
    parts.extend(load_notes(results))
    return Group(*parts)


def _compare_doc(doc: dict[str, Any]) -> RenderableType:
    return compare_report([LatencyResult.from_dict(r) for r in doc["runs"]], doc.get("skipped", {}))


report.register_renderer("latency", lambda doc: latency_report(LatencyResult.from_dict(doc)))
report.register_renderer("latency-compare", _compare_doc)
report.register_renderer("sweep", lambda doc: sweep_report([LatencyResult.from_dict(r) for r in doc["runs"]]))
