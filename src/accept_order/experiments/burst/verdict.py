"""One burst run's verdict, per client count: which mode served every client soonest, by the rule `burst --repeat`
ranks each of its rounds by (repeated.fastest: it served them all, more than 10% sooner than the next, and the load
generator did not set the pace of every mode that did), with the figures it stands on and how sure one burst can be.

A burst is a race with the scheduler: which cell steps to the kernel's 1 s SYN retry, and whether the accept queue
overflows at all, moves from run to run. So one run's ranking is said as one draw, and --repeat counts how often it
holds. Before this, a burst of several modes printed its table and details and no verdict at all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from ...analysis.tails import CLEAR
from ..generator_pace import paced_said
from .ranking import cell_of, fastest, paced, served_all, what_paced
from .result import BurstCell, BurstResult, BurstRun

HOW_SURE = "How sure: one burst each, a race with the scheduler; --repeat 3 says how often this holds"


def _time(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _joined(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _lost(cells: Sequence[tuple[str, BurstCell]]) -> str:
    """What the modes that did not serve every client lost, the fewest first: 'reuseport lost 260, epoll 1008'."""
    lost = sorted((cell.server_failed, label) for label, cell in cells)
    return ", ".join(f"{label} lost {n}" if k == 0 else f"{label} {n}" for k, (n, label) in enumerate(lost))


def _said(row: Sequence[BurstRun], clients: int) -> tuple[str, str] | None:
    """The verdict on one client count and its style; None where fewer than two modes had a burst of that size."""
    cells = [(run.server.label, cell) for run in row if (cell := cell_of(run, clients)) is not None]
    if len(cells) < 2:
        return None
    cut = [label for label, cell in cells if cell.interrupted]
    if cut:
        return f"no mode ranked: the stop cut {_joined(cut)}'s burst short", "yellow"
    if paced(row, clients):  # in the words burst --repeat says it in
        how, give = what_paced([cell for _, cell in cells if served_all(cell)])
        whose = "mode" if all(served_all(cell) for _, cell in cells) else f"mode that served all {clients} clients"
        return f"no mode ranked: {paced_said(f'{whose} in its one run', how, 'the times', give)}", "yellow"
    served = sorted((cell.wall_s, label, cell) for label, cell in cells if served_all(cell))
    failing = [(label, cell) for label, cell in cells if not served_all(cell)]
    winner = fastest(row, clients)
    if winner is not None:
        seconds = served[0][0]
        if len(served) == 1:
            text = f"{winner} alone served all {clients} clients ({_time(seconds)}; {_lost(failing)})"
        else:
            later, other = served[1][0], served[1][1]
            text = (
                f"{winner} served all {clients} clients soonest: {_time(seconds)}, the next ({other}) "
                f"{_time(later)}, {later / seconds:.2f}× its time"
            )
            text += f"; {_lost(failing)}" if failing else ""
        bound = [label for _, label, cell in served if cell.client_bound]
        if len(served) > 1 and served[0][2].client_bound and served[1][2].client_bound:
            # another mode that served them all was the server's pace, so the rule ranks; these two were not
            text += (
                f" (* {_joined(bound)}: the load generator set the pace, so what parts the first two is partly its own)"
            )
        elif bound:  # the pace of some, not all: those times are partly the load generator's
            text += f" (* {_joined(bound)}: the load generator set the pace)"
        return text, ""
    if served:
        times = ", ".join(f"{label} {_time(seconds)}" for seconds, label, _ in served)
        close = f"within {100 * (CLEAR - 1):.0f}% of each other"
        text = f"no mode ranked: {_joined([label for _, label, _ in served])} served all {clients} clients {close}"
        return f"{text} ({times}){f'; {_lost(failing)}' if failing else ''}", "yellow"
    return f"no mode served all {clients} clients ({_lost(failing)})", "yellow"


def _judged(result: BurstResult) -> list[tuple[int, str, str]]:
    """(clients, verdict with how sure, style) per client count where two modes or servers or more burst alike."""
    if len(result.runs) < 2:
        return []
    counts = sorted({cell.clients for run in result.runs for cell in run.cells})
    return [(n, f"{said[0]}. {HOW_SURE}", said[1]) for n in counts if (said := _said(result.runs, n)) is not None]


def burst_verdicts(result: BurstResult) -> list[Text]:
    """A verdict line per client count where two modes or servers or more burst alike; none for one."""
    return [Text(f"Verdict, {n} clients: {text}", style=style) for n, text, style in _judged(result)]


def burst_derived(result: BurstResult) -> dict[str, Any]:
    """What a saved burst adds for other tools, as a latency comparison adds its verdict: each client count's verdict
    and the mode it ranks first (None where it ranks none), by --repeat's rule."""
    return {
        "verdicts": [{"clients": n, "fastest": fastest(result.runs, n), "text": text} for n, text, _ in _judged(result)]
    }
