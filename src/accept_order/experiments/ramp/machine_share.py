"""Whether a ramp broke where other processes held most of the machine: a comparison of modes then says as much
about the machine as about the modes.

`ramp --modes epoll,reuseport` on a busy 2-CPU machine read 'Verdict: epoll held a higher load than the others in
this one run', where reuseport's first step that did not hold (1000/s, finished 606/s) had other processes using 83%
of the CPUs and the run's own workers and load generator 17% (its workers on a CPU 26% of the time for a load that
needed 50%): what broke it was the machine's, which the verdict did not say.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core.cgroup_cpu import throttle_sentence
from .result import RampResult
from .step_verdict import SATURATED, client_cpus


def others_at_break(run: RampResult) -> tuple[float, float] | None:
    """(other processes', the run's own) share of all CPUs over the run's first step that did not hold, where the
    host's CPUs were all busy (SATURATED) and the others' was the larger; None where not, or not known (no such step,
    no CPU readings, the workers' CPU not read, a load from client hosts, whose own CPUs this host cannot tell
    apart, or the run's cgroup throttled by its CPU limit). CPUs left idle were the run's to take: others at 33% and
    the run at 17% of a host half idle read 'that break may be the machine's', where nothing kept the run from the
    idle half."""
    broke = run.knee[1]
    cpus = run.environment.cpu_count if run.environment else 0
    if broke is None or broke.machine_cpu is None or not broke.worker_cpu or broke.hosts or cpus <= 0:
        return None
    if broke.machine_cpu < SATURATED:
        return None
    # a worker on a CPU nearly the whole step was not kept off one: the break was the run's (one queue that a hash
    # overloaded, or every worker busy), however small its share of a many-CPU host (-w 2 of 8 CPUs: 25% at most)
    if max(broke.worker_cpu) >= SATURATED:
        return None
    # the run's cgroup throttled by its CPU limit (a container's cpu.max) over the step: the run could not take
    # the CPUs others left, whatever their share (core/cgroup_cpu.py)
    if throttle_sentence(broke.throttled_ms or 0.0, broke.wall_s, broke.cpu_limit or ""):
        return None
    own = min((sum(broke.worker_cpu) + client_cpus(broke)) / cpus, broke.machine_cpu)
    others = broke.machine_cpu - own
    return (others, own) if others > own else None


def machine_caveat(losers: list[RampResult]) -> str:
    """', but where reuseport broke other processes used 83% of the CPUs (this run's own 17%): ...' for the modes
    that broke first while others held more of the machine than the run did; '' where none did."""
    said = [(run.server.label, shares) for run in losers if (shares := others_at_break(run)) is not None]
    if not said:
        return ""
    (label, (others, own)), rest = said[0], said[1:]
    where = f"where {label} broke other processes used {100 * others:.0f}% of the CPUs"
    where += f" (this run's own {100 * own:.0f}%)"
    where += "".join(f", where {n} broke {100 * o:.0f}% (its own {100 * w:.0f}%)" for n, (o, w) in rest)
    whose = "that break" if not rest else "those breaks"
    return f", but {where}: {whose} may be the machine's, not the mode's"


def machine_rounds(won: Sequence[Sequence[RampResult]], top: str) -> str:
    """'; in 2 of those runs a mode that broke first did so where other processes used more of the CPUs than the
    run itself' over `won`, the rounds in which `top` held the higher load; '' where in none."""
    busy = sum(any(others_at_break(r) is not None for r in row if r.steps and r.server.label != top) for row in won)
    if not busy:
        return ""
    runs = "that run" if len(won) == 1 else f"{busy} of those runs" if busy < len(won) else "each of those runs"
    return (
        f"; in {runs} a mode that broke first did so where other processes used more of the CPUs than the run "
        "itself: the machine's, perhaps, not the mode's"
    )
