"""The ordering experiments' Python API: `run` from keyword options, `sequential` and `compare` from specs,
and `serve` (connections by hand, tallied when it stops). Each validates what it is given and goes through
the one lifecycle (experiments/session.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from ...core.errors import PlanError
from ...core.measures import ConnectionRecord
from ...core.spec import SequentialLoad, ServerSpec, renamed
from ...servers.registry import checked, variants
from ..lifecycle import Measured, lifecycle
from ..session import run_each, run_sequential
from .result import RunResult

if TYPE_CHECKING:
    from ...core.target import Serving, Target
    from .serve_result import ServeResult

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


def serve(server: ServerSpec, announce: Callable[[Target], None] | None = None) -> ServeResult:
    """Keep the server up for connections made by hand until Ctrl-C or SIGTERM (how a server is stopped:
    the result follows), or a worker dies (WorkerError). `announce(target)` runs once it listens."""
    from .serve_result import ServeResult

    serving: list[Serving] = []

    def wait_for_stop(started: Target) -> None:
        target = cast("Serving", started)  # the built-in pool and every launched server can be waited on
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

    def build(_: None, m: Measured) -> ServeResult:
        return ServeResult(server, m.environment, m.port, m.counters, tuple(serving[0].sequence()), m.evidence)

    return lifecycle(server, wait_for_stop, describe, build, stamps=True)
