"""The Python API, and the façade every command of the CLI goes through.

`run(mode="epoll", workers=3, connections=6)` takes keyword options and returns a RunResult; the other
functions take frozen specs (spec.py) and plans. Each validates what it is given and goes through the one
lifecycle in session.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .core.errors import PlanError
from .core.measures import ConnectionRecord
from .core.spec import ConcurrentLoad, SequentialLoad, ServerSpec, renamed
from .experiments.herd.result import HerdResult
from .experiments.latency.result import LatencyResult
from .experiments.order.result import RunResult
from .experiments.session import Tick, lifecycle, run_each, run_latency, run_sequential
from .servers.registry import checked, variants

if TYPE_CHECKING:  # the experiments load only when their function runs (start-up time)
    import threading

    from .core.target import Target
    from .experiments.atlas.result import AtlasResult
    from .experiments.atlas.run import AtlasPlan
    from .experiments.burst.result import BurstRun
    from .experiments.burst.run import BurstPlan
    from .experiments.inspect.result import InspectResult
    from .experiments.observe.result import ObserveResult
    from .experiments.order.result import ServeResult
    from .experiments.ramp.result import RampResult
    from .experiments.ramp.run import RampPlan
    from .experiments.reload.result import ReloadRun
    from .experiments.reload.run import ReloadPlan

V = TypeVar("V")
R = TypeVar("R")
_SERVER_FIELDS = {f.name for f in dataclasses.fields(ServerSpec)}


def split_options(options: dict[str, Any], load_type: type) -> tuple[ServerSpec, Any]:
    """Keyword options -> (ServerSpec, load spec), each validated; PlanError names the first bad value."""
    options = renamed(ServerSpec, options)  # server= is kind='s name before 0.3
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


def sequential(
    server: ServerSpec,
    load: SequentialLoad,
    on_record: Callable[[ConnectionRecord], None] | None = None,
    on_started: Callable[[Target], None] | None = None,
) -> RunResult:
    """One sequential run of a spec (what `run` does after building it from keyword options)."""
    return run_sequential(server, load, on_record, on_started)


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


def burst(
    servers: Sequence[ServerSpec], plan: BurstPlan, on_burst: Callable[[ServerSpec, int], Tick | None] | None = None
) -> list[BurstRun]:
    """Seed 004's table: every burst of `plan` against each server, one server started at a time."""
    from .experiments.burst.run import burst_table

    return burst_table(servers, plan, on_burst)


def ramp(server: ServerSpec, plan: RampPlan, on_step: Callable[[float], Tick | None] | None = None) -> RampResult:
    """The breaking point: the offered load stepped up until a step does not hold."""
    from .experiments.ramp.run import run_ramp

    return run_ramp(server, plan, on_step)


def reload(
    variants: Sequence[tuple[ServerSpec, ReloadPlan]],
    load: ConcurrentLoad,
    on_run: Callable[[ServerSpec, ReloadPlan], Tick | None] | None = None,
) -> list[ReloadRun]:
    """One worker made to go mid-load, per (spec, plan). Run it inside the private network namespace
    (netns.enter_private): it sets net.ipv4.tcp_migrate_req there."""
    from .experiments.reload.run import reload_runs

    return reload_runs(variants, load, on_run)


def repeat(
    variants: Sequence[V], rounds: int, run_one: Callable[[V], R], on_round: Callable[[int], None] | None = None
) -> list[list[R]]:
    """`rounds` rounds, each running every variant once, interleaved (pyperf's way of sharing out drift);
    `on_round(k)` before round k starts."""
    from .experiments.repeat.run import interleaved

    return interleaved(variants, rounds, run_one, on_round)


def serve(server: ServerSpec, announce: Callable[[Target], None] | None = None) -> ServeResult:
    """Keep the server up for connections made by hand until Ctrl-C or SIGTERM (how a server is stopped:
    the result follows), or a worker dies (WorkerError). `announce(target)` runs once it listens."""
    from typing import cast

    from .core.target import Serving
    from .experiments.order.result import ServeResult

    serving: list[Serving] = []

    def wait_for_stop(started: Target) -> None:
        target = cast(Serving, started)  # the built-in pool and every launched server can be waited on
        serving.append(target)
        # Announced inside the try: a Ctrl-C that follows at once (before the wait begins) must still stop
        # the server the normal way, with the tally.
        try:
            if announce:
                announce(target)
            target.wait_for_death()  # returns only by raising: a worker died, or Ctrl-C / SIGTERM
        except KeyboardInterrupt:
            return

    def describe() -> str:
        counted = getattr(serving[0], "accepted_so_far", None) if serving else None
        if counted is None:
            return "serve stopped (nc clients are not ours to count)"
        return (
            f"serve stopped after the workers had accepted {counted()} connections (nc clients are not ours to count)"
        )

    _, m = lifecycle(server, wait_for_stop, describe, stamps=True)
    return ServeResult(server, m.environment, m.port, m.counters, tuple(serving[0].sequence()), m.evidence)


def inspect(pid: int | None = None, port: int | None = None, samples: int = 5) -> InspectResult:
    """How the server behind `pid` or `port` accepts, read from /proc (nothing sent, nothing signalled)."""
    from .experiments.inspect.run import inspect as inspect_server

    return inspect_server(pid=pid, port=port, samples=samples)


def atlas(plan: AtlasPlan, on_variant: Callable[[ServerSpec, int, int], None] | None = None) -> AtlasResult:
    """Every installed server in each of its modes, measured the same way (see experiments/atlas)."""
    from .experiments.atlas.run import run_atlas

    return run_atlas(plan, on_variant)


def observe(
    pid: int | None = None,
    port: int | None = None,
    duration_s: float = 30.0,
    on_snapshot: Callable[[ObserveResult], None] | None = None,
    trace: bool = True,
    interval_s: float = 1.0,
    until: threading.Event | None = None,
) -> ObserveResult:
    """Watch a running server's own traffic for `duration_s` (or until `until` is set), nothing driven and
    nothing signalled: per worker what it accepted, its CPU, the listen queue. `on_snapshot` gets the result
    so far every `interval_s`. Ctrl-C or SIGTERM: RunInterrupted carrying the result so far."""
    from .experiments.observe.run import observe as run_observe

    return run_observe(pid, port, duration_s, interval_s, trace, on_snapshot, until)
