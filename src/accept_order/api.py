"""The Python API: `run(mode="epoll", workers=3, connections=6)` returns a RunResult.

The CLI is a thin layer over these functions; tests and notebooks call them directly.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Callable
from typing import Any

import psutil

from . import analysis, environment
from .driver import drive
from .errors import PlanError, WorkerError
from .evidence import EvidenceCapture
from .kernel import format_cpu_list
from .modes import require_mode
from .records import ConnectionRecord, Plan, RunResult
from .supervisor import WorkerPool

MAX_WORKERS = 512
MAX_CONNECTIONS = 10_000_000
MAX_WORK_US = 60_000_000
MAX_ACCEPT_BATCH = 1 << 20


def _number(value: float) -> str:
    """10000000 rather than 1e+07: limits are read by people."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _check_range(name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise PlanError(f"{name} must be between {_number(low)} and {_number(high)}, got {_number(value)}")


def work_ms_to_us(work_ms: float) -> int:
    """--work-ms as whole microseconds; PlanError for nan or inf (which have no integer)."""
    if not math.isfinite(work_ms):
        raise PlanError(f"--work-ms must be a finite number, got {work_ms}")
    return int(round(work_ms * 1000))


def make_plan(**options: Any) -> Plan:
    """A validated Plan; PlanError (a usage error) names the first bad value."""
    if "work_ms" in options:
        options["work_us"] = work_ms_to_us(options.pop("work_ms"))
    if "cpus" in options and options["cpus"] is not None:
        options["cpus"] = tuple(options["cpus"])
    plan = Plan(**{k: v for k, v in options.items() if v is not None})
    require_mode(plan.mode)
    _check_range("--workers", plan.workers, 1, MAX_WORKERS)
    _check_range("--connections", plan.connections, 1, MAX_CONNECTIONS)
    _check_range("--port", plan.port, 0, 65535)
    _check_range("--work-us", plan.work_us, 0, MAX_WORK_US)
    _check_range("--work-iters", plan.work_iters, 0, 10**10)
    _check_range("--gap-ms", plan.gap_ms, 0, 60_000)
    _check_range("--backlog", plan.backlog, 1, 1 << 20)
    _check_range("--accept-batch", plan.accept_batch, 0, MAX_ACCEPT_BATCH)
    _check_range("--timeout", plan.timeout_s, 0.001, 3600)
    try:
        ipaddress.ip_address(plan.host)
    except ValueError:
        raise PlanError(f"--host must be an IP address such as 127.0.0.1 or ::1, got {plan.host!r}") from None
    _check_cpus(plan.cpus)
    return plan


def _check_cpus(cpus: tuple[int, ...]) -> None:
    """Refuse CPUs this process may not run on here, before a worker fails to pin itself to one."""
    try:
        allowed = set(psutil.Process().cpu_affinity() or ())
    except (psutil.Error, AttributeError):  # no affinity support: let the worker try
        return
    bad = sorted(set(cpus) - allowed)
    if bad and allowed:
        here = format_cpu_list(sorted(allowed))
        raise PlanError(f"--cpus: CPU {format_cpu_list(bad)} not available here (allowed: {here})")


def run_plan(plan: Plan, on_record: Callable[[ConnectionRecord], None] | None = None) -> RunResult:
    mode = require_mode(plan.mode)
    env = environment.current()
    started = time.perf_counter()
    capture = EvidenceCapture(host=plan.host)
    capture.before()  # counters before any worker exists; listeners and affinities while they run
    finished: list[ConnectionRecord] = []

    def record(rec: ConnectionRecord) -> None:
        finished.append(rec)
        if on_record:
            on_record(rec)

    with WorkerPool(plan) as pool:
        capture.listeners(pool.port, "start")
        try:
            records = drive(
                pool.address,
                plan.connections,
                gap_s=plan.gap_ms / 1000,
                timeout_s=plan.timeout_s,
                before_each=pool.between_connections,
                on_record=record,
            )
        except WorkerError as exc:
            # The run stops, but the connections it drove are still accounted for in the message.
            served = sum(1 for r in finished if r.served)
            raise WorkerError(
                f"{exc}; the run stopped after {len(finished)} connections "
                f"({served} served, {len(finished) - served} failed)",
                exc.index,
            ) from None
        pool.check_alive()
        evidence = capture.after(pool.port, pool.pids)
        counters = pool.stop()
        pool.check_stopped()  # a worker that died serving the last connection can outrun check_alive
        port, unsettled = pool.port, pool.unsettled
    verdict = analysis.verdict(records, plan.workers, mode.model, mode.why, counters)
    return RunResult(
        plan=plan,
        environment=env,
        port=port,
        records=tuple(records),
        counters=tuple(counters),
        verdict=verdict,
        evidence=evidence,
        wall_s=round(time.perf_counter() - started, 6),
        unsettled=unsettled,
    )


def run(mode: str = "epoll", workers: int = 3, connections: int = 6, **options: Any) -> RunResult:
    """Run one experiment: start workers, drive connections, stop, and return what was seen."""
    return run_plan(make_plan(mode=mode, workers=workers, connections=connections, **options))
