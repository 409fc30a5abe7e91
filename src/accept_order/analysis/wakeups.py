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


#: Sleeps up to this many times what wakeups alone could give (every worker once a connection, plus a first wait
#: each) are still read as wakeups: the built-in herd modes' workers sleep a few times besides, and 'run -m
#: poll|select|epoll-herd -w 2|4 -n 1000' (24 runs, load 3-5) went up to 1.2% over in 12 of them, each of which
#: then lost its 'thundering herd' (eight workers' 'empty' wakeups beside it); Puma's waits for Ruby's lock put
#: 39% (2 workers) and 167% (1) over.
SLEEPS_OVER = 1.1


def wakeups_per_connection(counters: Sequence[WorkerCounters], served: int, workers: int) -> float | None:
    """woken_per_connection where those sleeps can all have been wakeups; None where they cannot: one
    connection wakes each of the `workers` at most once, and the run's edges add at most one sleep a worker
    (its first wait), so more sleeps than that (past SLEEPS_OVER) slept for something else too; and one worker
    is no herd, so its sleeps at the herd's threshold are not its wakeups either. Puma's server thread also
    sleeps on Ruby's lock (the GVL, a futex) while a pool thread runs: 'run --server puma -m less-busy -w 1 -n 8
    --work 2ms' counted 24 sleeps, where bpftrace's sched_switch saw its select sleep 9 times and the futex 21,
    and the verdict said 'thundering herd (3.0 workers woken per connection)' of its one worker."""
    woken = woken_per_connection(counters, served)
    if woken is None:
        return None
    if workers < 2 and woken >= HERD_THRESHOLD:
        return None
    return None if woken * served > SLEEPS_OVER * workers * (served + 1) else woken


def workers_woken(woken: float, workers: int) -> float:
    """The workers a connection woke, as a herd's sentence says it: its sleeps per connection, no more than the
    workers there are (the few sleeps SLEEPS_OVER lets past them are not more workers: 'herd -w 4' read 4.05)."""
    return min(woken, float(workers))
