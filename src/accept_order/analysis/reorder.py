"""nginx's order with EPOLLEXCLUSIVE and multi_accept off (1.21.6+), predicted connection by connection.

Each worker adds the shared listener to its own epoll with EPOLLEXCLUSIVE, so the listener's wait queue holds
one entry per worker, and a connection wakes the first entry whose worker waits. After each wakeup's accepts a
worker calls ngx_reorder_accept_events, which re-adds its listener (epoll_ctl DEL then ADD: to the back of
the queue) when its accept count before this one was a multiple of 16: at its first accept, then at its
17th, 33rd, ... At a fresh nginx that gives one connection to each worker, in the order they first queued
(which start-up decides), then runs of 16 in that same order.

`reorder_fit` plays that queue forward over the workers that served sequential connections (every worker
idle at each one): while some worker has not accepted yet, the mechanism predicts one of those (which one,
nobody can say); after that, the worker at the head of the queue. The queue moves by who really served, so
one surprise costs one connection, not the rest of the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

EVERY = 16  # ngx_reorder_accept_events: `c->requests++ % 16`


def reorder_fit(sequence: Sequence[int], workers: int, every: int = EVERY) -> tuple[int, list[float]]:
    """(connections the mechanism predicted, for each connection the chance that a worker picked at random
    among the `workers` idle ones is one the mechanism allows). `sequence`: who served each sequential
    connection, at an nginx started for the run (no connection before the first)."""
    accepts: dict[int, int] = {}
    queue: list[int] = []  # the workers that have accepted, in their order in the listener's wait queue
    fit = 0
    odds: list[float] = []
    for w in sequence:
        fresh = workers - len(accepts)  # never accepted: still ahead of every re-added entry
        if fresh > 0:
            fit += w not in accepts
            odds.append(fresh / workers)
        else:
            fit += bool(queue) and w == queue[0]
            odds.append(1 / workers)
        n = accepts.get(w, 0)
        if n % every == 0:  # re-added: to the back of the queue
            if w in queue:
                queue.remove(w)
            queue.append(w)
        accepts[w] = n + 1
    return fit, odds


def _start_up(sequence: Sequence[int], workers: int) -> tuple[int, str]:
    """(connections up to the one at which every worker had accepted, or all of them; those in words)."""
    seen: set[int] = set()
    end = len(sequence)
    for i, w in enumerate(sequence):
        seen.add(w)
        if len(seen) == workers:
            end = i + 1
            break
    if end == len(seen):  # each to a worker that had not accepted yet
        return end, "one per worker at start" if end == workers else f"one each to {end} of the {workers} workers"
    if len(seen) == workers:
        return end, f"every worker's first accept within the first {end}"
    return end, f"the first {end} to {len(seen)} of the {workers} workers"


def _runs(lengths: Sequence[int], every: int) -> str:
    """The runs after the start-up, as long as they were: nginx's runs of `every` only when they were."""
    if len(lengths) == 1:
        if lengths[0] < every:
            return f"a run of {lengths[0]} (of {every}: the load ended first)"
        return f"a run of {lengths[0]}"
    if all(n == every for n in lengths[:-1]) and lengths[-1] <= every:  # the last one cut short by the load's end
        return f"runs of {every} per worker"
    if len(lengths) <= 4:
        return f"runs of {', '.join(map(str, lengths[:-1]))} and {lengths[-1]}"
    full = sum(n == every for n in lengths)
    return f"runs of {min(lengths)} to {max(lengths)} ({full} of the {len(lengths)} {every} long)"


def reorder_pattern(sequence: Sequence[int], workers: int, every: int = EVERY) -> str:
    """The order, in words, as the sequence showed it: the start-up (each worker's first accept), then the
    lengths of the runs seen, which are the mechanism's runs of `every` only when they were `every` long."""
    start, head = _start_up(sequence, workers)
    lengths = [len(list(run)) for _, run in groupby(sequence[start:])]
    return f"{head}, then {_runs(lengths, every)}" if lengths else head
