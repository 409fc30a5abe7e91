"""What one request's busy loop costs on this machine, timed before a run (the seed's Lua loop)."""

from __future__ import annotations

import math
import time

from ..core.spec import ServerSpec


def spin(work_us: int, work_iters: int) -> int:
    """Burn CPU like the seed's Lua loop: `work_iters` additions, then until `work_us` has passed."""
    i = 0
    for _ in range(work_iters):
        i += 1
    if work_us:
        end = time.perf_counter_ns() + work_us * 1000
        while time.perf_counter_ns() < end:
            i += 1
    return i


def estimate_work_us(plan: ServerSpec, spins_here: bool, sample_iters: int = 300_000) -> float | None:
    """What one request's busy loop costs here: work_us plus the timed cost of work_iters (best of 3
    on a sample, scaled), so a run with `--work-iters` can say how much CPU that is on this machine.
    `spins_here`: the server's loop is `spin` in this interpreter (its kind's `spins_here`); another loop
    (nginx's LuaJIT is ~50 times faster) is not timed."""
    if not plan.work_iters or not spins_here:
        return None
    n = min(plan.work_iters, sample_iters)
    best = math.inf
    for _ in range(3):
        t = time.perf_counter_ns()
        spin(0, n)
        best = min(best, time.perf_counter_ns() - t)
    return plan.work_us + best / 1000 * plan.work_iters / n
