"""Workers that held no connection in a run over kept connections. The tails' verdict compares percentiles
only; where the kept table shows a worker with no connection (a pool of 8 over 4 workers that a hash or a
favouring queue left one worker out of), the others carried its share, each request queued behind more of
its worker's connections, and that is part of the run's tail: the verdict says it beside the tails."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ...core.text import plural
from .kept_report import accepted, requests
from .result import LatencyResult


def _label(result: LatencyResult) -> str:
    return result.server.label


def held_nothing(result: LatencyResult, name: Callable[[LatencyResult], str] = _label) -> str | None:
    """`epoll: workers 2 and 3 held no connection, so the other 2 carried their share: the busiest held 21 of
    the 32 connections, 8 on an even spread`; None when every worker held one, when the connections were not kept,
    or when it did not matter to the tail: the busiest worker carried no more than an even spread gives one
    (3 connections over 4 workers leave one out whatever the mode does)."""
    workers = result.server.workers
    took = accepted(result)
    if not result.load.keeps_connections or took is None or len(took) != workers or not sum(took):
        return None
    idle = [w for w, n in enumerate(took) if n == 0]
    if not idle:
        return None
    # A pool kept for the whole run carries the connections it holds; K > 1 connections come and go, and
    # what a worker carried is the requests it served (the replies say, where they name a worker).
    served = requests(result)
    per_request = result.load.requests_per_connection != 0 and served is not None and len(served) == workers
    carried = list(served) if per_request and served is not None else list(took)
    total = sum(carried)
    even = math.ceil(total / workers)
    if not total or max(carried) <= even:
        return None
    unit = "request" if per_request else "connection"
    who = f"worker {idle[0]}" if len(idle) == 1 else "workers " + ", ".join(map(str, idle[:-1])) + f" and {idle[-1]}"
    share = "its" if len(idle) == 1 else "their"
    verb = "served" if per_request else "held"
    others = workers - len(idle)  # 'the other worker', not 'the other 1' (io-uring's ring: worker 0 alone)
    rest = "the other worker" if others == 1 else f"the other {others}"
    return (
        f"{name(result)}: {who} held no connection, so {rest} carried {share} share: "
        f"the busiest {verb} {max(carried):,} of the {plural(total, unit, grouped=True)}, {even:,} on an even spread"
    )


def held_nothing_notes(results: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label) -> str:
    """The runs' notes joined, as a parenthesis after the verdict ('' when none)."""
    notes = [note for r in results if r.ok and (note := held_nothing(r, name)) is not None]
    return f" ({'; '.join(notes)})" if notes else ""
