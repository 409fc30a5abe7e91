"""Whether runs compared one after another had the machine alike: on a host whose CPUs were all busy, what other
processes left each run bounds what it could do, whichever the mode.

'latency --modes epoll,reuseport -w 2 -c 32 --duration 5s' here, with other processes taking more of the CPUs during
the second run (79% of them during epoll, 88% during reuseport, the host 100% busy throughout), read 'Verdict: epoll
had the tightest tail of these runs ... p99 (20.23 vs 59.62 ms, 0.34x) ... apart beyond their own samples', where
reuseport's run had 12% of the CPUs to itself against epoll's 21% (and served 3,391/s against 6,568/s).

Unlike shares alone do not say the machine was unlike: on a busy host other processes take whatever a run leaves
idle. 'latency --modes epoll,accept-mutex -w 2 -c 32 --work 1ms --duration 5s' here left the runs 81% and 53% of
the CPUs, the accept mutex's own doing (the worker without the lock slept: 2.0 CPU-seconds of 5 against 2.8 and
3.8), and the note said the machine was not alike, where the load generator had waited for a CPU 8% of its time in
each. So the run with the smaller share must also have waited for a CPU more: its load generator's run-queue time
(/proc/self/schedstat), the one wait the run reads of its own processes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core.cgroup_cpu import throttled_said
from .besides_queueing import by_label
from .result import LatencyResult

SATURATED = 0.9  # the host's CPUs this busy over a run: what others left it is what it could have
UNEQUAL = 0.75  # one run's own share of the CPUs below this fraction of another's: not the machine alike
WAITED_MORE = 0.1  # and its load generator waited for a CPU this much more of its time than the other's did


def _own(result: LatencyResult) -> tuple[float, float] | None:
    """(the run's own share of all CPUs, other processes' share) where the host's CPUs were saturated; None where
    the run's cgroup was throttled by its CPU limit: its share was the limit's, not what others left it."""
    shares = result.others_cpu_share
    if shares is None or shares[0] < SATURATED or throttled_said(result.evidence.get("machine")):
        return None
    busy, others = shares
    return busy - others, others


def _waited(result: LatencyResult) -> float | None:
    """The share of its time the load generator on this machine's CPUs waited for one (run-queue time over wall
    time, its drivers together); None where a driver's is not known (no schedstat, an older file) or none ran here."""
    drivers = [d for h in result.shared_hosts for d in h.drivers] if result.hosts else list(result.drivers)
    wall = sum(d.wall_s for d in drivers)
    if not drivers or wall <= 0 or any(d.runqueue_s is None for d in drivers):
        return None
    return sum(d.runqueue_s or 0.0 for d in drivers) / wall


def machine_note(
    runs: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = by_label, what: str = "mode"
) -> str:
    """'the machine was not alike for them: ...' where the runs' own shares of a saturated host's CPUs differ by more
    than UNEQUAL allows and the run with the smaller share waited for a CPU more (WAITED_MORE); '' otherwise (or
    where not known for each run). `what` the runs vary: a mode, a sweep's cap."""
    owned = [(name(r), shares, _waited(r)) for r in runs if (shares := _own(r)) is not None]
    if len(owned) < 2 or len(owned) < len(runs):
        return ""
    (least, (own_l, others_l), waited_l), (most, (own_m, others_m), waited_m) = (
        min(owned, key=lambda x: x[1][0]),
        max(owned, key=lambda x: x[1][0]),
    )
    if own_m <= 0 or own_l >= UNEQUAL * own_m:
        return ""
    if waited_l is None or waited_m is None or waited_l < waited_m + WAITED_MORE:  # idle by its own doing, perhaps
        return ""
    return (
        f"the machine was not alike for them: other processes used {100 * others_m:.0f}% of the CPUs during {most} "
        f"and {100 * others_l:.0f}% during {least}, leaving the runs {100 * own_m:.0f}% and {100 * own_l:.0f}% (the "
        f"host's CPUs all busy), and the load generator waited for a CPU {100 * waited_l:.0f}% of its time during "
        f"{least} against {100 * waited_m:.0f}% during {most}: what parts them may be the CPU each got as much as the "
        f"{what}; --repeat interleaves them"
    )
