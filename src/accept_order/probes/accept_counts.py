"""What counting accepts in the kernel gives (accepts.py's AcceptCounter, accept_log.py's and accept_watch.py's
counters): the accepts per process over the window, or why there are none, and what a result file keeps of them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .bpftrace_readings import gap_us


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
    # the gaps between a thread's accept that took a connection and its next accept call, by bucket (accept_program.
    # GAP_BUCKETS; bpftrace_readings.gap_us): a worker that serves one connection at a time serves it in between;
    # None where not counted
    gaps: dict[int, int] | None = None

    def evidence(self, followed: int | None = None) -> dict[str, Any]:
        """What a result file keeps (evidence `accept_counts`); `followed`: the master whose children were
        counted too (AcceptCounter.children_of), with what those that were not asked about accepted."""
        kept: dict[str, Any] = {"available": self.available, "why": self.why, "counts": self.counts}
        kept |= {"reading_before_s": self.reading_before_s} if self.reading_before_s > 0 else {}
        kept |= {"empty": self.empty} if self.empty is not None else {}
        kept |= {"gaps": self.gaps} if self.gaps is not None else {}
        return kept | ({"followed": followed, "appeared": self.appeared} if followed is not None else {})


def gap_sample(evidence: Mapping[str, Any], size: int) -> tuple[list[float], int]:
    """At most `size` gaps (µs) spread evenly through those the kernel counted between a thread's accept that took a
    connection and its next accept call (evidence accept_counts `gaps`, each the middle of its bucket), and how many
    it counted; ([], 0) where not counted (a file from before it, no bpftrace) or not of that shape."""
    kernel = evidence.get("accept_counts")
    gaps = kernel.get("gaps") if isinstance(kernel, Mapping) and kernel.get("available") is True else None
    if not isinstance(gaps, Mapping):
        return [], 0
    try:
        pairs = sorted((gap_us(int(k)), n) for k, n in gaps.items() if type(n) is int and n > 0)
    except ValueError:
        return [], 0
    count = sum(n for _, n in pairs)
    every = [us for us, n in pairs for _ in range(n)] if count <= size else []
    if every or not count:
        return every, count
    ranks, out, seen, index = iter((k + 0.5) * count / size for k in range(size)), [], 0, 0
    for rank in ranks:  # the (k + 0.5)/size quantiles, in order
        while seen + pairs[index][1] <= rank:
            seen, index = seen + pairs[index][1], index + 1
        out.append(pairs[index][0])
    return out, count
