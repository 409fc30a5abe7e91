"""A mean service time as a report says it, to the precision it was measured.

The built-in workers time each connection to the whole microsecond, rounded down (core/service_time.py), so a mean
of their times lies between the mean of what they stored and one microsecond more. Without --work a connection's
service is a fraction of a microsecond: every time stored is 0, and rounding the mean to the µs read 'mean 0 ms'
(`sweep -n 3000 -c 32`), as if nothing had been measured. Where that microsecond is more than a tenth of the mean,
the mean is said as the range it is known to; above, the rounded figure as before. A mean not rounded down by a
clock (the workers' CPU per connection) is said to a tenth of a µs below 10 µs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .text import durations_us

RESOLUTION_US = 1  # what the workers' clock keeps of each connection's service (it drops the rest)
RANGE_BELOW_US = 10 * RESOLUTION_US  # under it the dropped microsecond is more than a tenth of the mean


def _figure(us: float) -> str:
    return f"{us:.1f}".removesuffix(".0")


def _known_to(us: float) -> str:
    """A mean of rounded-down times as the range it lies in: `0.6-1.6`; widened to the tenth outward, since each
    end rounded to the nearest tenth could leave the mean out (0.66 stored: 0.6-1.7, not 0.7-1.7). A float's
    last bits are dropped first: 0.29999999999999993 is 0.3, not 0.2."""
    low = math.floor(round(us * 10, 6)) / 10
    high = math.ceil(round((us + RESOLUTION_US) * 10, 6)) / 10
    return f"{_figure(low)}-{_figure(high)}"


def service_mean(mean_us: float, by_worker_us: Sequence[float], rounded_down: bool) -> str:
    """`mean M[, A to B by worker]`: one unit on the line. `rounded_down`: the times were the workers' own (each
    cut to the whole µs); `by_worker_us`: each worker's mean, shown when there are two or more."""
    extremes = [min(by_worker_us), max(by_worker_us)] if len(by_worker_us) > 1 else []
    if not rounded_down and 0 < mean_us < RANGE_BELOW_US:  # a CPU time or a configured loop: to a tenth of a µs
        return f"mean {_figure(mean_us)} µs"
    if not rounded_down or mean_us >= RANGE_BELOW_US:
        mean, *spread = durations_us(round(mean_us), *(round(us) for us in extremes))
        return f"mean {mean}" + (f", {spread[0]} to {spread[1]} by worker" if spread else "")
    if mean_us == 0:
        # every connection's time was stored as 0: each took under the clock's microsecond, and so did the mean
        return f"mean under {RESOLUTION_US} µs, each under the whole µs the workers time to"
    apart = ""
    if extremes and extremes[1] - extremes[0] >= RESOLUTION_US:  # workers apart by more than the clock can blur
        apart = f", {_known_to(extremes[0])} to {_known_to(extremes[1])} µs by worker"
    return f"mean {_known_to(mean_us)} µs{apart}, the workers' times rounded down to the µs"
