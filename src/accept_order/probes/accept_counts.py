"""What counting accepts in the kernel gives (accepts.py's AcceptCounter, accept_log.py's and accept_watch.py's
counters): the accepts per process over the window, or why there are none, and what a result file keeps of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AcceptCounts:
    """Per-process accepts seen during the window between start() and stop().

    ``counts`` maps pid (the thread-group id: every thread of a worker counts for it), or a thread's id for a
    worker that is a thread (accept_filter.thread_workers), to the number of accept()/accept4() calls that
    returned a descriptor. With a pid filter, every filtered pid is a key, 0 included. ``why`` names the source
    when ``available``, else the reason there are no counts."""

    counts: dict[int, int]
    available: bool
    why: str
    # with `children_of`: the accepts of that process's children that were not among the pids asked about (the
    # workers a reload or a respawn started during the window), by pid; empty otherwise
    appeared: dict[int, int] = field(default_factory=dict)
    # not END's counts: bpftrace's last periodic reading stands (this line says when it was taken; `why` has it too)
    short: str = ""
    # how long before the window closed that reading was taken (0: after it): the accepts since are in no count
    reading_before_s: float = 0.0
    # the accepts that came back empty (EAGAIN), by pid; None where they were not counted (a periodic reading's
    # counts, a program that does not count them)
    empty: dict[int, int] | None = None

    def evidence(self, followed: int | None = None) -> dict[str, Any]:
        """What a result file keeps (evidence `accept_counts`); `followed`: the master whose children were
        counted too (AcceptCounter.children_of), with what those that were not asked about accepted."""
        kept: dict[str, Any] = {"available": self.available, "why": self.why, "counts": self.counts}
        kept |= {"reading_before_s": self.reading_before_s} if self.reading_before_s > 0 else {}
        kept |= {"empty": self.empty} if self.empty is not None else {}
        return kept | ({"followed": followed, "appeared": self.appeared} if followed is not None else {})
