"""What one kept-connection driver (loads/kept.py) counts per reply: the requests each worker answered, the
connections whose first reply named it, and the replies' durations per worker, a connection's first request
apart from its later ones.

The first request of a connection also waits for the connect and for a worker to accept it, behind whatever
else is queued on the listener (nginx, multi_accept off, takes one queued connection per event-loop turn: a
worker holding 36 of 100 connections opened at once answered their first requests from 1.2 to 6.5 s); its
later ones wait only for the worker. Kept in one histogram, the fill reads as the steady state's tail."""

from __future__ import annotations

from typing import Any


class KeptTally:
    """Per worker (by the index or key its replies give): requests answered, connections accepted, and two
    duration histograms (microseconds -> requests), each connection's first request and the rest."""

    __slots__ = ("served", "accepted", "firsts", "later")

    def __init__(self) -> None:
        self.served: dict[int, int] = {}
        self.accepted: dict[int, int] = {}  # connections whose first reply named the worker
        self.firsts: dict[int, dict[int, int]] = {}  # each connection's first request's duration
        self.later: dict[int, dict[int, int]] = {}  # every later request's

    def reply(self, who: int, us: int, first: bool) -> None:
        """A reply from worker `who` after `us` microseconds; `first`: the connection's first reply."""
        self.served[who] = self.served.get(who, 0) + 1
        if first:
            self.accepted[who] = self.accepted.get(who, 0) + 1
            book = self.firsts
        else:
            book = self.later
        counts = book.get(who)
        if counts is None:
            counts = book[who] = {}
        counts[us] = counts.get(us, 0) + 1

    def place(self, us: int, who: int, unnamed: int = -1) -> None:
        """A connection counted for `unnamed` (its replies name no worker), whose first reply took `us`, found held by
        worker `who`: that reply, and the connection, are counted for `who` instead."""
        for counts in (self.served, self.accepted):
            counts[unnamed] -= 1
            if not counts[unnamed]:
                del counts[unnamed]
            counts[who] = counts.get(who, 0) + 1
        book = self.firsts[unnamed]
        book[us] -= 1
        if not book[us]:
            del book[us]
        mine = self.firsts.setdefault(who, {})
        mine[us] = mine.get(us, 0) + 1

    def report(self) -> dict[str, Any]:
        """The driver report's fields: `counts` (every request), `worker_counts` (each worker's, every request),
        `first_counts` (each worker's, the connections' first requests only), `served`, `connections`."""
        total: dict[int, int] = {}
        by_worker: dict[int, dict[int, int]] = {}
        for book in (self.firsts, self.later):
            for who, counts in book.items():
                mine = by_worker.setdefault(who, {})
                for us, n in counts.items():
                    total[us] = total.get(us, 0) + n
                    mine[us] = mine.get(us, 0) + n
        return {
            "counts": list(total.items()),
            "worker_counts": {who: list(counts.items()) for who, counts in by_worker.items()},
            "first_counts": {who: list(counts.items()) for who, counts in self.firsts.items()},
            "served": dict(self.served),
            "connections": dict(self.accepted),
        }
