"""How far a load has got, as its progress says it: connections (or requests) finished, and of those how many
were served and how many timed out. A count alone reads as all is well when every connection is waiting out its
timeout ('2,950 of 20,000 connections' at a server that answers none): the split says it.

Each driver publishes PUBLISHED numbers in the shared progress array (loads/generator.py): finished and served
as they change, timed out once a tick (where the loops look for them: nothing is added to the hot path)."""

from __future__ import annotations

from collections.abc import Sequence

from .protocol import TIMEOUT

PUBLISHED = 3  # per driver in the shared progress array: finished, served, timed out
FINISHED_AT, SERVED_AT, TIMED_OUT_AT = 0, 1, 2


class Finished(int):
    """Connections (or requests) finished so far, with how many were served and how many timed out.

    An int because the count passes through every experiment's tick (the session's worker check, a ramp's
    queue sampling, a reload's retire, a client host's relay), each typed `done: int` and passing it on as it
    came: the split reaches the progress line without each of them changing; arithmetic on it gives a plain int."""

    served: int
    timed_out: int

    def __new__(cls, done: int, served: int, timed_out: int = 0) -> Finished:
        finished = super().__new__(cls, done)
        finished.served = served
        finished.timed_out = timed_out
        return finished

    def __reduce__(self) -> tuple[type[Finished], tuple[int, int, int]]:  # pickle's and copy's: int's gave the count
        return Finished, (int(self), self.served, self.timed_out)  # alone, which __new__ refused (TypeError)

    @property
    def failed(self) -> int:
        return max(int(self) - self.served, 0)


def outcome_text(done: int) -> str:
    """`0 served, 2,950 failed (timeout)`: how the finished ones ended, "" for a bare count (a tick that carries
    no split). The cause is named where every failure so far timed out, else how many of them did."""
    if not isinstance(done, Finished):
        return ""
    text = f"{done.served:,} served, {done.failed:,} failed"
    timed_out = min(done.timed_out, done.failed)  # published once a tick, it may lag: never more than failed
    if timed_out and timed_out == done.failed:
        return f"{text} ({TIMEOUT})"
    return f"{text} ({timed_out:,} timed out)" if timed_out else text


def published(progress: Sequence[int]) -> Finished:
    """The sum over the drivers of what each published in `progress` (a shared array of PUBLISHED per driver)."""
    values = progress[:]  # one copy: the three sums from the same read
    return Finished(
        sum(values[FINISHED_AT::PUBLISHED]), sum(values[SERVED_AT::PUBLISHED]), sum(values[TIMED_OUT_AT::PUBLISHED])
    )


def short_outcome_text(done: int) -> str:
    """outcome_text where a narrow terminal has no room for it: the failures alone, beside the count that says how
    many finished (`0 failed`, `2,950 timed out` where every failure so far timed out); "" for a bare count."""
    if not isinstance(done, Finished):
        return ""
    timed_out = min(done.timed_out, done.failed)
    if timed_out and timed_out == done.failed:
        return f"{timed_out:,} timed out"
    return f"{done.failed:,} failed"
