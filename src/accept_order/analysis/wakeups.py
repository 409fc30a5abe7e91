"""Wakeups per connection, read from the workers' sleeps, and the count at which they are a herd: what every
run's verdict reads (analysis/order.py). Apart from herd.py (the `herd` command's rows), so that a run does
not make the herd table's dataclass (issue 30: start-up)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.measures import WorkerCounters

#: Sleeps (woken) per connection at or above this count as a herd. One per connection is the idle floor
#: (the winner sleeps again after answering); a herd of W idle workers gives about W.
HERD_THRESHOLD = 1.5


def woken_per_connection(counters: Sequence[WorkerCounters], served: int) -> float | None:
    """The workers' voluntary context switches (sleeps) per served connection; None when a worker's are not
    known. Where a worker sleeps only after a wakeup, the workers one connection woke (see the module)."""
    switches = [c.voluntary_switches for c in counters]
    if not served or any(s is None for s in switches):
        return None
    return sum(s for s in switches if s is not None) / served
