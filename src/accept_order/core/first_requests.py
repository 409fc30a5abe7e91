"""Each kept connection's first request, apart from its later ones (loads/kept_tally.py counts them): the first
also waited for the connect and for a worker to accept it, behind whatever else was queued on the listener; the
later ones wait only for the worker. A part of the load's histogram and of each worker's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .histogram import LatencyHistogram


@dataclass(frozen=True)
class FirstRequests:
    """`every`: every connection's first request's duration (those whose worker the replies did not name too);
    `workers`: per worker index, its connections' first requests' (empty where no reply named a worker)."""

    every: LatencyHistogram
    workers: tuple[LatencyHistogram, ...] = ()

    def extend(self, other: FirstRequests) -> FirstRequests:
        """Two loads' first requests as one's: added, worker by worker."""
        every = LatencyHistogram()
        every.merge(self.every)
        every.merge(other.every)
        workers = []
        for i in range(max(len(self.workers), len(other.workers))):
            h = LatencyHistogram()
            for side in (self.workers, other.workers):
                if i < len(side):
                    h.merge(side[i])
            workers.append(h)
        return FirstRequests(every, tuple(workers))

    def to_dict(self) -> dict[str, Any]:
        return {"every": self.every.to_dict(), "workers": [h.to_dict() for h in self.workers]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> FirstRequests | None:
        """From a file's `first_requests`; None where it has none (older files, which did not keep them apart)."""
        if not isinstance(data, Mapping):
            return None
        return cls(
            LatencyHistogram.from_dict(data["every"]),
            tuple(LatencyHistogram.from_dict(h) for h in data.get("workers", ())),
        )


def added(a: FirstRequests | None, a_kept: bool, b: FirstRequests | None, b_kept: bool) -> FirstRequests | None:
    """Two loads' first requests as one: known only where each load that kept connections kept them apart (`a_kept`,
    `b_kept`: the load kept its connections)."""
    sides = [(f, kept) for f, kept in ((a, a_kept), (b, b_kept)) if kept]
    if not sides or any(f is None for f, _ in sides):
        return None
    known = [f for f, _ in sides if f is not None]
    return known[0].extend(known[1]) if len(known) == 2 else known[0]
