"""The Python API: `run(mode="epoll", workers=3, connections=6)` returns a RunResult.

Each function builds the specs, validates them, and goes through the one lifecycle in session.py; the
CLI calls the same functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from .errors import PlanError
from .experiments.herd.result import HerdResult
from .experiments.latency.result import LatencyResult
from .experiments.order.result import RunResult
from .measures import ConnectionRecord
from .servers.registry import checked, variants
from .session import Tick, run_each, run_latency, run_sequential
from .spec import ConcurrentLoad, SequentialLoad, ServerSpec

_SERVER_FIELDS = {f.name for f in dataclasses.fields(ServerSpec)}


def split_options(options: dict[str, Any], load_type: type) -> tuple[ServerSpec, Any]:
    """Keyword options -> (ServerSpec, load spec), each validated; PlanError names the first bad value."""
    load_fields = {f.name for f in dataclasses.fields(load_type)}
    unknown = sorted(set(options) - _SERVER_FIELDS - load_fields)
    if unknown:
        raise TypeError(f"unknown option(s): {', '.join(unknown)}")
    server = {k: v for k, v in options.items() if k in _SERVER_FIELDS}
    if "cpus" in server:
        server["cpus"] = tuple(server["cpus"] or ())
    load = {k: v for k, v in options.items() if k in load_fields}
    return checked(ServerSpec(**server)), load_type(**load).validated()


def run(mode: str = "epoll", workers: int = 3, connections: int = 6, **options: Any) -> RunResult:
    """Run one experiment: start workers, drive connections one by one, stop, and return what was seen."""
    server, load = split_options(dict(mode=mode, workers=workers, connections=connections, **options), SequentialLoad)
    return run_sequential(server, load)


def compare(
    server: ServerSpec,
    load: SequentialLoad,
    modes: Sequence[str] | None,
    on_record: Callable[[ConnectionRecord], None] | None = None,
    servers: Sequence[str] | None = None,
    batch_given: bool = True,
) -> tuple[list[RunResult], dict[str, str]]:
    """The same settings once per mode (None or ["all"]: every mode) of each server (default: the spec's);
    (results, {mode: why it was left out}). `batch_given=False`: each server's own accept-batch default."""
    if modes is not None and not modes:
        raise PlanError("no modes given")
    specs, skipped = variants(server, modes, servers, batch_given)  # all checked before any runs
    return run_each(specs, lambda spec: run_sequential(spec, load, on_record)), skipped


def herd(
    server: ServerSpec,
    load: SequentialLoad,
    modes: Sequence[str],
    on_record: Callable[[ConnectionRecord], None] | None = None,
) -> HerdResult:
    """Every mode with the same workers and connections, one at a time (gap 0) and settled, so each
    connection meets every worker idle and asleep: how many does it wake?"""
    load = dataclasses.replace(load, settle=True, gap_ms=0.0)
    runs, skipped = compare(server, load, modes, on_record)
    return HerdResult(server.workers, load.connections, server.work_us, server.backlog, tuple(runs), skipped)


def latency(
    server: ServerSpec, load: ConcurrentLoad, on_tick: Tick | None = None, title: str | None = None
) -> LatencyResult:
    return run_latency(server, load, on_tick, title)


def compare_latency(
    server: ServerSpec,
    load: ConcurrentLoad,
    modes: Sequence[str] | None,
    on_run: Callable[[ServerSpec], Tick | None] | None = None,
    servers: Sequence[str] | None = None,
    batch_given: bool = True,
) -> tuple[list[LatencyResult], dict[str, str]]:
    """One latency run per mode of each server, same settings; (results, {mode: why it was left out})."""
    specs, skipped = variants(server, modes, servers, batch_given)
    return run_each(specs, lambda spec: run_latency(spec, load, on_run(spec) if on_run else None)), skipped


def sweep_accept_batch(
    server: ServerSpec,
    load: ConcurrentLoad,
    values: Sequence[int],
    on_run: Callable[[ServerSpec], Tick | None] | None = None,
) -> list[LatencyResult]:
    """One latency run per accepts-per-wakeup cap: the seed-001 experiment."""
    from .experiments.latency.result import default_title

    specs = [server.replace(accept_batch=value) for value in values]  # every value before the first run
    return run_each(
        specs,
        lambda spec: run_latency(spec, load, on_run(spec) if on_run else None, default_title(spec, sweep=True)),
    )
