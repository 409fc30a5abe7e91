"""Where the load generator, not the server, set the pace of every run a verdict compares, the verdict ranks none
and says so, in the same words for burst --repeat, latency --modes and sweep (one run or --repeat) and ramp --modes.

Each experiment knows it its own way: a burst whose load generator took more than half of it to start the
connections (burst/result.BurstCell.client_bound), a latency run whose load generator was on a CPU nearly all the
time while the workers idled (loads/client_warnings.client_bound, the warning its report gives), a ramp step whose
note says so (ramp/step_verdict.CLIENT_PACED). Either way the figures are partly the client's, and what parts two runs
may be the client's too: a busy machine gives the load generator a different share of its CPUs from one run to the
next.
What would leave the pace to the servers depends on what the generator did: on a CPU all the time, more processes;
waiting for one, CPUs of its own (OWN_CPUS)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..loads.client_warnings import client_bound

if TYPE_CHECKING:  # not imported at start-up by burst's report, which has no latency run
    from .latency.result import LatencyResult

GIVE_IT = "give it more --driver-procs, or CPUs of its own with --load-cpus"  # as the warning's own advice
# A generator that waited for a CPU rather than ran on one: more of its processes would wait for the same CPUs
OWN_CPUS = "give it CPUs of its own: --load-cpus, or --client-hosts"
GENERATOR_PACED = "the load generator set the pace"


def paced_said(runs: str, how: str, figures: str, give: str = GIVE_IT) -> str:
    """'the load generator set the pace of every RUNS (HOW), so FIGURES are partly its own, not the servers' (GIVE:
    what would leave the pace to the servers)'."""
    return f"{GENERATOR_PACED} of every {runs} ({how}), so {figures} are partly its own, not the servers' ({give})"


def every_run_paced(results: Sequence[LatencyResult]) -> bool:
    """Two runs at least, and in each the load generator on a CPU nearly all the time while the workers idled."""
    return len(results) > 1 and all(
        client_bound(list(r.drivers), r.worker_cpu_s, r.wall_s, r.worker_cpus) is not None for r in results
    )


WARNED = "on a CPU nearly all the time while the workers idled: the warning above"
# --repeat's report warns of no run's client: its verdict points at the runs' own figures instead
CLOCKS = "on a CPU nearly all the time while the workers idled: each run's own clocks"


def latency_paced_said(runs: str, how: str = WARNED) -> str:
    """The latency reports' sentence: every `runs` (run, cap's run) was the load generator's pace."""
    return paced_said(runs, how, "their latencies")
