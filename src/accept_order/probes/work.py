"""What one request's busy loop costs on this machine, timed before a run (the seed's Lua loop)."""

from __future__ import annotations

import math
import time

from ..servers.worker import spin
from ..spec import ServerSpec


def estimate_work_us(plan: ServerSpec, sample_iters: int = 300_000) -> float | None:
    """What one request's busy loop costs here: work_us plus the timed cost of work_iters (best of 3
    on a sample, scaled), so a run with `--work-iters` can say how much CPU that is on this machine."""
    if not plan.work_iters or plan.kind != "builtin":
        return None  # this times the built-in workers' Python loop; nginx's LuaJIT loop is ~50 times faster
    n = min(plan.work_iters, sample_iters)
    best = math.inf
    for _ in range(3):
        t = time.perf_counter_ns()
        spin(0, n)
        best = min(best, time.perf_counter_ns() - t)
    return plan.work_us + best / 1000 * plan.work_iters / n
