"""Whether runs compared with one --work burned alike work: a server's busy loop is timed by its own clock, and
not every clock is each worker's own CPU.

nginx's and lighttpd's loops read os.clock(), their worker process's CPU; the built-in workers, h2o and Apache the
wall clock, which a worker preempted on a busy host passes while it waits (h2o 0.89 ms, the built-in workers 1.16 ms
a request beside nginx's 1.05 ms). HAProxy's threads read their own CPU through Debian's lua-posix, and where it is
missing their process's (os.clock()), which its threads spinning at once advance together: 'latency --server
nginx,haproxy -w 4 --pool -c 32 --requests-per-connection 0 --work 1ms --duration 5s' here (2 CPUs, load 4) then read
'haproxy threads had the tightest tail of these runs: ... p99 (65.92 vs 143.70 ms, 0.46x)', HAProxy's threads having
used 0.59 ms of CPU a request (3.3 s over 5,569, the kernel's count) and nginx's workers 1.05 ms (3.67 s over 3,495):
half the work for each answer. Such a run's evidence says so (work_clock), and so does this note.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence

from ...core.work_clocks import PROCESS_CLOCK
from ...render.text import duration_us, durations_us
from .besides_queueing import by_label
from .result import LatencyResult

UNALIKE = 0.75  # one run's CPU a request below this fraction of another's: the work was not alike


def cpu_per_request_us(result: LatencyResult) -> float | None:
    """The workers' CPU (the kernel's count) over the requests the run served; None where a worker's is unknown."""
    cpu = [c.cpu_s for c in result.counters]
    if not result.ok or not cpu or any(s is None for s in cpu):
        return None
    return 1e6 * sum(s or 0.0 for s in cpu) / result.ok


def work_note(runs: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = by_label) -> str:
    """'they did not burn alike work: ...' where servers of different kinds given one --work used CPU a request that
    differs by more than UNALIKE allows, the least under UNALIKE of the work; '' otherwise (one kind, no work, works
    that differ, or a run whose CPU is not known)."""
    return repeated_work_note({name(r): [r] for r in runs})


def repeated_work_note(variants: Mapping[str, Sequence[LatencyResult]]) -> str:
    """work_note over --repeat's rounds: each variant's median CPU a request over its runs ('' where a run's is not
    known): the clocks that part them part every round, which --repeat does not interleave away."""
    runs = [r for each in variants.values() for r in each]
    works = {r.server.work_us for r in runs}
    if len({r.server.kind for r in runs}) < 2 or len(works) != 1 or not (work := works.pop()):
        return ""  # one server's modes time the loop by one clock; a mode's own cost (a herd's) is its doing
    each = {name: [us for r in rs if (us := cpu_per_request_us(r)) is not None] for name, rs in variants.items()}
    if any(not us or len(us) < len(variants[name]) for name, us in each.items()):
        return ""
    used = [(name, statistics.median(us)) for name, us in each.items()]
    (least, least_us), (most, most_us) = min(used, key=lambda x: x[1]), max(used, key=lambda x: x[1])
    if least_us >= UNALIKE * min(most_us, work):
        return ""  # alike, or above 3/4 of the work asked: what a server adds to the loop is its own cost
    less, more = durations_us(round(least_us), round(most_us))
    median = ", medians over the runs" if any(len(rs) > 1 for rs in variants.values()) else ""
    shared = any(r.evidence.get("work_clock") == PROCESS_CLOCK for r in runs)
    process = "; HAProxy's threads by their process's, lua-posix being missing" if shared else ""
    return (
        f"they did not burn alike work: for --work {duration_us(work)} the workers used {less} of CPU a request "
        f"during {least} against {more} during {most} (the kernel's count over the requests served{median}; each "
        f"server times its loop by its own clock{process}): what parts them may be the work each did as much as the "
        "mode"
    )
