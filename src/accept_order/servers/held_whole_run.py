"""Refuse, before anything runs, a pool the built-in workers could never fill: --pool connections beyond the
workers of a mode that serves a kept connection to its end before it accepts another (ModeInfo.multiplexes
False: blocking, epoll-shared).

Each such worker holds one connection, and a pool's connections send nothing more until every one of them
has been answered, so the fill stops at one per worker after a timeout per driver: 'latency -m blocking
--pool -c 8 -w 2' filled 2 of its 8 and spent 20.05 s in pool-fill timeouts before it ran over those 2.
Without a pool the same connections do end (--requests-per-connection 0 lives until the load does): a
count's last requests go, the held connections close, and the workers take the queued ones ('-m blocking
--requests-per-connection 0 -c 8 -w 2 -n 400' answered all 400, the queued 6 late; an open loop at --rate 200
opens a connection per driver and answered every request at 1.4 ms p99; a --duration run times out the queued
ones, which its report says): those run. A launched server's own rules may end a held connection (Apache's
KeepAliveTimeout), so only the built-in kind, whose workers are this tool's, is refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.concurrent_load import ConcurrentLoad
from ..core.errors import PlanError
from ..core.spec import DEFAULT_KIND, ServerSpec
from .registry import server_kind


def _asked(load: ConcurrentLoad, held: str) -> str:
    """The options that hold each connection for the whole run, as given."""
    said = ["--pool"] if load.pool else []
    said += ["--requests-per-connection 0"] if load.requests_per_connection == 0 else []
    return " ".join([*said, held])


def refuse_unanswered(
    specs: Iterable[ServerSpec], load: ConcurrentLoad, concurrency: int | None = None, option: str = "-c"
) -> None:
    """PlanError for the first built-in spec whose workers serve each kept connection to its end while the
    load's pool is to hold more connections than workers. `concurrency`: the most the load holds
    (a ramp's largest step), else the load's own; `option`: the one that sets it."""
    if not load.pool:
        return  # connections end (after K requests, or with the load) and free their workers: slow, not stuck
    held = load.concurrency if concurrency is None else concurrency

    for spec in specs:
        if spec.kind != DEFAULT_KIND:
            continue
        modes = server_kind(spec.kind).modes()
        info = modes.get(spec.mode)
        if info is None or info.multiplexes or held <= spec.workers:
            continue
        waiting = [name for name, other in modes.items() if other.multiplexes][:2]
        raise PlanError(
            f"{_asked(load, f'{option} {held}')}: each of mode {spec.mode}'s "
            f"{spec.workers} workers serves a kept connection to its end before it accepts another, so "
            f"{held - spec.workers} of the {held} connections would never be answered: give {option} {spec.workers} or "
            f"fewer, -w {held}, or a mode that waits on its kept connections ({', '.join(waiting)})"
        )
