"""Which service time the latency model takes of a launched or attached server whose workers were looked at every
few milliseconds (probes/busy_waits.py): their busy time per connection, where they slept off the CPU while serving
(a database's reply, an upstream's, an app's sleep), or their CPU per connection, which leaves those sleeps out.

The share of their busy looks asleep decides, and a share of a few looks is not sure: a run of a tenth of a second
at 3 workers holds 45 busy looks or so, and a share read near a fifth may fall on either side of it run to run, the
predictions a few times apart. So the choice says how sure it is (a 95% Wilson interval of the share, the looks
taken as independent draws: looks 5 ms apart of requests of a few ms are nearly so), and a reading of too few busy
looks does not choose the busy time: it is then a few looks' worth, and their CPU is kept, said not sure."""

from __future__ import annotations

import math
from dataclasses import dataclass

# The share of the workers' busy time asleep off the CPU while serving from which their busy time, not their CPU, is
# the service time: a handler that waits (a database, an upstream, a sleep). Attached here, nginx 1.22 (return 200, 2
# workers) slept none of it outside epoll_wait; PyPI's gunicorn 27 (3 sync workers, an app sleeping 2 ms) 76%, in
# clock_nanosleep.
SLEPT_SERVING = 0.2
# Busy looks, all workers together, under which neither source is chosen on them: the busy time of n looks is known
# to about 1/sqrt(n) of itself (50: 14%, one standard deviation), and a share of 50 looks near a fifth to ±11 points
MIN_BUSY_LOOKS = 50
Z95 = 1.959964  # the normal quantile of a two-sided 95% interval


@dataclass(frozen=True)
class SourceChoice:
    """The busy-time looks' word on the service source: whether the busy time is taken, and how sure that is."""

    busy: bool  # the workers' busy time per connection is the service time (else their CPU per connection)
    sure: bool  # the share's whole 95% interval is on the chosen side of SLEPT_SERVING, of enough busy looks
    looks: int  # busy looks, all workers together
    slept: int  # of them, asleep off the CPU while serving
    share: float  # the share of the busy time asleep (each look weighted by the time it stood for)

    @property
    def interval(self) -> tuple[float, float]:
        """The share's 95% interval, of the looks' counts."""
        return wilson(self.slept, self.looks)

    @property
    def enough(self) -> bool:
        return self.looks >= MIN_BUSY_LOOKS


def wilson(hits: int, draws: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a share hits/draws ((0, 1) of no draws)."""
    if draws <= 0:
        return 0.0, 1.0
    p = hits / draws
    centre = (p + z * z / (2 * draws)) / (1 + z * z / draws)
    half = z / (1 + z * z / draws) * math.sqrt(p * (1 - p) / draws + z * z / (4 * draws * draws))
    return max(0.0, centre - half), min(1.0, centre + half)


def choose(looks: int, slept: int, share: float) -> SourceChoice:
    """The busy time where enough busy looks found the workers asleep for SLEPT_SERVING of it or more (its point
    share); sure where the share's 95% interval is all on one side of it. Too few looks: their CPU, not sure."""
    if looks < MIN_BUSY_LOOKS:
        return SourceChoice(False, False, looks, slept, share)
    low, high = wilson(slept, looks)
    busy = share >= SLEPT_SERVING
    return SourceChoice(busy, low >= SLEPT_SERVING if busy else high < SLEPT_SERVING, looks, slept, share)
