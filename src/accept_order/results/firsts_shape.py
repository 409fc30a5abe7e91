"""The rule a kept run's `first_requests` (core/first_requests.py: the connections' first requests) keeps as its
file is read: they are a part of the run's requests, value by value: `every` of `histogram`, each of `workers` of
that worker's `worker_histograms`, one per worker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.text import plural
from .schema import SchemaError, child


def _within(part: Mapping[str, Any], whole: Mapping[str, Any], at: str, whose: str) -> None:
    """Each duration of `part` counted no more often than in `whole` (`whose`: what whole is, as said)."""
    counts: dict[int, int] = {}
    for us, n in whole["counts"]:
        counts[us] = counts.get(us, 0) + n
    for us, n in part["counts"]:
        if n > counts.get(us, 0):
            raise SchemaError(at, f"holds {n} first requests of {us} µs, but {whose} {counts.get(us, 0)}")


def firsts_within(run: Mapping[str, Any], at: str) -> None:
    firsts = run.get("first_requests")
    if not isinstance(firsts, Mapping):
        return
    at = child(at, "first_requests")
    _within(firsts["every"], run["histogram"], child(at, "every"), "the run's histogram")
    workers, every = firsts.get("workers") or [], run.get("worker_histograms") or []
    if workers and len(workers) != len(every):
        entries = plural(len(workers), "entry", "entries")
        raise SchemaError(child(at, "workers"), f"has {entries}, but worker_histograms {len(every)}")
    for index, (first, mine) in enumerate(zip(workers, every, strict=False)):
        _within(first, mine, child(child(at, "workers"), index), "the worker's histogram")
