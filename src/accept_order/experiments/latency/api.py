"""The latency experiments' Python API: one run, one per mode, one per accepts-per-wakeup cap."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core.spec import ConcurrentLoad, ServerSpec
from ...servers.held_whole_run import refuse_unanswered
from ...servers.registry import refuse_closing, variants
from ..session import Tick, run_each, run_latency
from .result import LatencyResult, default_title


def latency(
    server: ServerSpec, load: ConcurrentLoad, on_tick: Tick | None = None, title: str | None = None
) -> LatencyResult:
    refuse_unanswered([server], load)  # before anything starts
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
    refuse_closing([spec.kind for spec in specs], load)  # every one before the first runs
    refuse_unanswered(specs, load)
    return run_each(specs, lambda spec: run_latency(spec, load, on_run(spec) if on_run else None)), skipped


def sweep_accept_batch(
    server: ServerSpec,
    load: ConcurrentLoad,
    values: Sequence[int],
    on_run: Callable[[ServerSpec], Tick | None] | None = None,
) -> list[LatencyResult]:
    """One latency run per accepts-per-wakeup cap: the seed-001 experiment. An error after a cap's run:
    RunStopped with the caps so far."""
    specs = [server.replace(accept_batch=value) for value in values]  # every value before the first run
    refuse_closing([server.kind], load)
    refuse_unanswered([server], load)
    return run_each(
        specs,
        lambda spec: run_latency(spec, load, on_run(spec) if on_run else None, default_title(spec, sweep=True)),
        keep_on_error=True,
    )
