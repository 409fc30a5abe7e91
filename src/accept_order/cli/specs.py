"""Parsed options -> frozen specs. The one place the CLI turns what the user typed into what runs."""

from __future__ import annotations

from typing import Any

import click

from ..spec import ClosedLoopLoad, SequentialLoad, ServerSpec, ms_to_us, pinned


def work_us(options: dict[str, Any]) -> int:
    work_ms, us = options.pop("work_ms", None), options.pop("work_us", None)
    if work_ms is not None and us is not None:
        raise click.UsageError("give --work-ms or --work-us, not both")
    if us is not None:
        return int(us)
    return ms_to_us(work_ms) if work_ms is not None else 0


def first_available(modes: list[str], server: str | list[str] = "builtin") -> str | None:
    """The mode a several-mode command's shared settings are checked with (the first it can run)."""
    from ..servers.catalog import modes_of, split_for

    server = server[0] if isinstance(server, list) else server
    wanted = [m for m in modes if m in modes_of(server)] if modes != ["all"] else None
    available = split_for(server, wanted)[0]
    return available[0] if available else None


def server_spec(options: dict[str, Any], mode: str | None = None) -> ServerSpec:
    """Pops the server's options out of `options` and returns the validated spec."""
    from ..cpus import allowed_cpus
    from ..servers.catalog import default_accept_batch

    workers = options.pop("workers", None)
    server = options.pop("server", "builtin")
    server = server[0] if isinstance(server, list) else server
    batch = options.pop("accept_batch", None)
    spec = ServerSpec(
        server=server,
        mode=mode or options.pop("mode", None) or ServerSpec.mode,
        workers=workers if workers is not None else len(allowed_cpus()),
        host=options.pop("host", ServerSpec.host),
        port=options.pop("port", 0),
        work_us=work_us(options),
        work_iters=options.pop("work_iters", 0),
        backlog=options.pop("backlog", ServerSpec.backlog),
        accept_batch=default_accept_batch(server) if batch is None else batch,
        cpus=tuple(options.pop("cpus", None) or ()),
    )
    return pinned(spec, options.pop("pin", False)).validated()


def sequential_load(options: dict[str, Any]) -> SequentialLoad:
    return SequentialLoad(
        connections=options.pop("connections"),
        gap_ms=options.pop("gap_ms", 0.0),
        timeout_s=options.pop("timeout_s"),
        settle=not options.pop("no_settle", False),
    ).validated()


def closed_loop_load(options: dict[str, Any]) -> ClosedLoopLoad:
    from ..spec import DEFAULT_REQUESTS

    connections, alias = options.pop("connections", None), options.pop("requests_alias", None)
    if connections is not None and alias is not None:
        raise click.UsageError("give --connections (-n) only; --requests is its old name")
    connections = connections if connections is not None else alias
    duration = options.pop("duration_s", None)
    if connections is not None and duration is not None:
        raise click.UsageError("give --connections (-n) or --duration, not both")
    if connections is None and duration is None:
        connections = DEFAULT_REQUESTS
    return ClosedLoopLoad(
        connections=connections,
        duration_s=duration,
        concurrency=options.pop("concurrency"),
        driver_procs=options.pop("driver_procs"),
        timeout_s=options.pop("timeout_s"),
    ).validated()
