"""The rule a burst's modes are ranked by, one round of `burst --repeat` (repeated.py) and one run (verdict.py) alike:
a mode ranks first at a client count where it served every client, more than CLEAR sooner than the next, and the load
generator did not set the pace of every mode that served them all; and what that pace was, where it was the
generator's."""

from __future__ import annotations

from collections.abc import Sequence

from ...analysis.tails import CLEAR
from ...core.measures import SATURATED
from ...loads.client_warnings import STARVED
from ..generator_pace import GIVE_IT, OWN_CPUS
from .result import BurstCell, BurstRun


def cell_of(run: BurstRun, clients: int) -> BurstCell | None:
    return next((c for c in run.cells if c.clients == clients), None)


def served_all(cell: BurstCell | None) -> bool:
    return cell is not None and not cell.failed and not cell.interrupted and cell.wall_s > 0


def paced(row: Sequence[BurstRun], clients: int) -> bool:
    """Every mode of this round that served all `clients` (two at least) had them started at the load generator's
    pace (BurstCell.client_bound): no server set its time."""
    cells = [cell for run in row if served_all(cell := cell_of(run, clients)) and cell is not None]
    return len(cells) > 1 and all(cell.client_bound for cell in cells)


def fastest(row: Sequence[BurstRun], clients: int) -> str | None:
    """The mode of this round that served all `clients` more than CLEAR sooner than any other; None when
    two were within CLEAR of each other, none served them all, or the load generator set every one's pace."""
    if paced(row, clients):
        return None
    times = sorted(
        (cell.wall_s, run.server.label) for run in row if served_all(cell := cell_of(run, clients)) and cell is not None
    )
    if not times or (len(times) > 1 and times[1][0] <= times[0][0] * CLEAR):
        return None
    return times[0][1]


def what_paced(cells: Sequence[BurstCell]) -> tuple[str, str]:
    """Why the load generator was the pace of these bursts, from its processes' own clocks, and what would leave the
    pace to the servers: on a CPU all the time, more processes; waiting for one (a busy machine, or the workers on
    the same CPUs: 47-93% of their time in burst_repeat_paced.json, on a CPU 14-37%), CPUs of its own."""
    how = "it took more than half of each burst to start the connections"
    drivers = [d for cell in cells for d in cell.drivers if d.wall_s > 0]
    busiest = max((d.cpu_fraction for d in drivers), default=0.0)
    if busiest > SATURATED:
        return f"{how}, a process of it on a CPU up to {100 * busiest:.0f}% of its time", GIVE_IT
    waits = [d.runqueue_s / d.wall_s for d in drivers if d.runqueue_s is not None]
    if waits and max(waits) > STARVED:
        on = [d.cpu_fraction for d in drivers]
        waited = f"{100 * min(waits):.0f}-{100 * max(waits):.0f}"
        return (
            f"{how}, its processes waiting for a CPU {waited}% of their time and on one {100 * min(on):.0f}-"
            f"{100 * max(on):.0f}%",
            OWN_CPUS,
        )
    return how, OWN_CPUS  # a file without the clocks: CPUs of its own leave the pace to the servers either way
