"""The fields of observe's result about its load sampling (load.py's LoadSampler fills them; ObserveResult's
fields by the same names)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypedDict


class LoadSummary(TypedDict, total=False):
    """The result's fields about the load sampling (ObserveResult's, by name)."""

    load_samples: int
    load_every_s: float
    load_longest_s: float | None
    accepted_seen: int
    closed_busy: int
    closed_busy_bytes_in: int
    closes_counted: int
    closes_lost: int
    closes_skipped: int
    closed_unlooked: int
    closed_unlooked_bytes_in: int
    closes_late: int
    closes_late_bytes_in: int
    process_segments_in: int
    process_connections: int


class Carries(Protocol):
    """What one worker process's connections carried (load_tally.py's Carried)."""

    segments_in: int
    connections: set[int]


def per_process(carried: Iterable[Carries]) -> LoadSummary:
    """A threaded server's load as a whole, where its threads share one fd table and no thread's own is known: the
    data segments its connections received while observed and the connections a look saw holding, so that its
    sleeps are told per segment where a connection carries many (keep-alive, HTTP/2: 7,888 'per connection' for
    HAProxy's threads over wrk's 8 kept connections read as a herd)."""
    processes = list(carried)
    return {
        "process_segments_in": sum(c.segments_in for c in processes),
        "process_connections": sum(len(c.connections) for c in processes),
    }
