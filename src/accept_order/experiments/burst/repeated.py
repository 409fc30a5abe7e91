"""`burst --repeat N`: per cell (server and mode x clients) the time until every client was served and the
failures, as median and range over the runs; per client count, which mode was fastest in how many runs.

A round's fastest mode for N clients served every one of them (a mode that lost clients never served them
all) and did so more than CLEAR sooner than the next: within that margin, or with nobody serving all of
them, the round names none. Nor where the load generator set the pace of every mode that served them all (each
burst's *: it took more than half of it to start the connections): the times are then the generator's, which a
busy machine runs at its own pace from one run to the next (burst --repeat 3 --clients 200,1000 here, load 9:
'reuseport was fastest' in a round where both modes' connections took the generator 19-25 of their 33-40 ms)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ...analysis.stability import Spread, Stability, agreement
from ...analysis.syn_retrans import RTO_FLOOR_US
from ...analysis.tails import CLEAR
from ...render.evidence import listener_drops_said
from ...render.text import duration_us, plural
from ..generator_pace import GENERATOR_PACED, paced_said
from ..own_settings import backlog_said, caps_said
from ..repeat.kinds import Document, Repeated, Rounds, by_variant, each
from .ranking import cell_of as _cell
from .ranking import fastest as fastest
from .ranking import paced as paced
from .ranking import served_all as _served_all
from .ranking import what_paced as _what_paced
from .report import outgrows_a_ring, split_of
from .result import BURST_RUN, BurstCell, BurstRun

LEGEND = (
    "median (min-max) over the runs of the time from the first connect to the last reply or failure, and the failures "
    "where any failed; * in some run the load generator took more than half of it to start the connections. "
    f"Fastest: served every client, more than {100 * (CLEAR - 1):.0f}% sooner than the next mode"
)


def _name(run: BurstRun) -> str:
    return run.server.label


def _next_ratio(rounds: Rounds, label: str, clients: int) -> Spread | None:
    """Over the rounds a server set the pace of: the quickest other mode's time to serve all `clients` over
    `label`'s (in a round `label` did not win, below 1)."""
    ratios = []
    for row in (row for row in rounds if not paced(row, clients)):
        times = {_name(r): c.wall_s for r in row if _served_all(c := _cell(r, clients)) and c is not None}
        mine = times.pop(label, None)
        if mine and times:
            ratios.append(min(times.values()) / mine)
    return Spread.of(ratios) if ratios else None


def _paced_modes(rounds: Rounds, clients: int) -> str:
    """Whose pace the generator set in these rounds: every mode's, or where some lost clients, every mode's that
    served them all (one that lost some ranks nowhere, and whether the generator paced it its time does not show)."""
    cells = [_cell(r, clients) for row in rounds for r in row]
    return "mode" if all(_served_all(c) for c in cells) else f"mode that served all {clients} clients"


def fastest_stability(rounds: Rounds, clients: int, advice: str = "try more --repeat") -> Stability:
    """How many runs name the same mode fastest to serve all `clients`, and in how many the load generator set
    every mode's pace (those name none, and say why: not 'no mode ... sooner than the others')."""
    n, left = len(rounds), sum(paced(row, clients) for row in rounds)
    if left == n:
        runs = "its one run" if n == 1 else f"each of the {n} runs"
        served = [c for row in rounds for r in row if _served_all(c := _cell(r, clients)) and c]
        how, give = _what_paced(served)
        return Stability(
            f"no mode ranked: {paced_said(f'{_paced_modes(rounds, clients)} in {runs}', how, 'the times', give)}",
            False,
            0,
            n,
            None,
        )
    outcomes = [fastest(row, clients) for row in rounds]
    claim = f"was fastest to serve all {clients} clients"
    none = f"no mode served all {clients} clients more than {100 * (CLEAR - 1):.0f}% sooner than the others"
    if not left:
        return agreement(outcomes, claim, none, advice)
    stability = agreement(outcomes, claim, none, advice="")  # the advice after why some rounds rank none
    paced_rows = [row for row in rounds if paced(row, clients)]
    said = (
        f"; in {left} of the {n} runs {GENERATOR_PACED} of every {_paced_modes(paced_rows, clients)}, so they rank none"
    )
    more = f"; {advice}" if advice and stability.agree and not stability.conclusive else ""
    return replace(stability, text=stability.text + said + more)


def _retried(cell: BurstCell | None) -> bool:
    """The server's listeners dropped handshake packets in this burst and it lasted past the 1 s a client waits before
    it sends a dropped SYN again: its time holds that wait."""
    return cell is not None and bool(cell.listener_drops) and cell.wall_s * 1e6 >= RTO_FLOOR_US


def _others_dropped(rounds: Rounds, winner: str, clients: int) -> str:
    """For the verdict: in how many of the runs `winner` was fastest another mode's time held the 1 s SYN wait (a full
    accept queue: 'epoll 1.04-1.10 s, reuseport 0.19 s' was reuseport's two listeners' room for 2,000, as much as
    its pace)."""
    won = [row for row in rounds if fastest(row, clients) == winner]
    held = sum(1 for row in won if any(_retried(_cell(r, clients)) for r in row if _name(r) != winner))
    if not held:
        return ""
    which = f"each of the {held} runs" if held == len(won) else f"{held} of the {len(won)} runs"
    which = "the one run" if len(won) == 1 else which  # not 'each of the 1 runs'
    return (
        f"; in {which} it was fastest, another mode's listeners dropped handshake packets and its time held the "
        "1 s a client waits to send a dropped SYN again (lines below)"
    )


def _drops(label: str, clients: int, runs: Sequence[BurstRun]) -> str | None:
    """The runs of one cell whose listeners dropped handshake packets, and those whose time held the SYN's wait."""
    cells = [c for r in runs if (c := _cell(r, clients)) is not None]
    dropped = [c.listener_drops for c in cells if c.listener_drops]
    if not dropped:
        return None
    said = f"  {label}, {clients}: {listener_drops_said(min(dropped), max(dropped))} in {len(dropped)} of its "
    said += f"{plural(len(cells), 'run')}"
    if slow := sum(1 for c in cells if _retried(c)):
        backlog = "/".join(map(str, runs[0].server.known_backlogs))  # none said of a server elsewhere
        said += (
            f"; {slow} of them lasted over 1 s, the wait before a client sends a dropped SYN again: a full accept "
            f"queue{f' (backlog {backlog} per listener)' if backlog else ''} set that time as much as the mode did"
        )
    return said


def _ring_splits(label: str, clients: int, runs: Sequence[BurstRun]) -> str | None:
    """How often a burst larger than a ring holds stayed with one worker and how often it was handed on (io-uring):
    the one run's note (report.py) says one burst is one of both outcomes and sends here for how often each, which
    this report did not say ('burst --modes io-uring -w 2 --clients 500 --repeat 3' read only its times)."""
    cells = [c for r in runs if outgrows_a_ring(r, clients) and (c := _cell(r, clients)) is not None]
    if not cells:
        return None
    kept = sum(1 for c in cells if sum(1 for n in (c.connections or c.served) if n) <= 1)
    return (
        f"  {label}, {clients}: one worker took every connection in {kept} of {plural(len(cells), 'run')}, handed on "
        f"in {len(cells) - kept} (accepted per worker: {', '.join(split_of(c) for c in cells)})"
    )


def _seconds(values: list[float]) -> str:
    """Median (range) in seconds, or in milliseconds when every value is under a second."""
    spread = Spread.of(values)
    return f"{spread.text()} s" if spread.high >= 1 else f"{spread.text(0.001)} ms"


def _cell_text(cells: list[BurstCell | None]) -> Text:
    done = [c for c in cells if c is not None]
    if not done:
        return Text("-")
    text = Text(_seconds([c.wall_s for c in done]))
    failed = [c.failed for c in done]
    if any(failed):
        text.append(f" failed {Spread.of(failed).text(fmt='{:.0f}')}", style="yellow")
    if any(c.client_bound for c in done):
        text.append(" *", style="yellow")
    return text


def report(rounds: Rounds) -> list[RenderableType]:
    variants = by_variant(BURST_REPEATED, rounds)
    table = Table(title="accept-order burst --repeat", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("clients", justify="right")
    for label in variants:
        table.add_column(label, justify="right")
    counts = sorted({c.clients for runs in variants.values() for r in runs for c in r.cells})
    for n in counts:
        table.add_row(str(n), *[_cell_text([_cell(r, n) for r in runs]) for runs in variants.values()])
    parts: list[RenderableType] = [table, Text(LEGEND, style="dim")]
    server = rounds[0][0].server
    settings = f"{plural(server.workers, 'worker')}, work {duration_us(server.work_us)}{backlog_said(server)}"
    settings += caps_said([run.server for run in rounds[0]])
    parts.append(Text(settings, style="dim"))
    if len(variants) > 1:
        for n in counts:
            stability = fastest_stability(rounds, n, advice="")
            ratio = _next_ratio(rounds, stability.winner, n) if stability.winner else None
            said = f"; the quickest other took {ratio.text()}× its time (below 1: sooner)" if ratio else ""
            said += "" if stability.conclusive or not stability.agree else "; try more --repeat"
            said += _others_dropped(rounds, stability.winner, n) if stability.winner else ""
            style = "green" if stability.conclusive else "yellow"
            parts.append(Text(f"Verdict, {n} clients: {stability.text}{said}", style=style))
    parts += [
        Text(line, style="yellow")
        for label, runs in variants.items()
        for n in counts
        if (line := _drops(label, n, runs))
    ]
    parts += [Text(line) for label, runs in variants.items() for n in counts if (line := _ring_splits(label, n, runs))]
    for label, runs in variants.items():
        for n in counts:
            errors: dict[str, int] = {}
            for cell in (_cell(r, n) for r in runs):
                for name, k in (cell.errors if cell else {}).items():
                    errors[name] = errors.get(name, 0) + k
            if errors:
                lost = sum(1 for r in runs if (c := _cell(r, n)) is not None and c.failed)
                by = ", ".join(f"{k} {v}" for k, v in sorted(errors.items(), key=lambda kv: -kv[1]))
                parts.append(Text(f"  {label}, {n}: failed in {lost}/{len(runs)} runs ({by} in all)"))
    return parts


def _rows(doc: Document) -> list[list[Any]]:
    run = BurstRun.from_dict(doc)
    return [[_name(run), c.clients, c.wall_s, sum(c.served), c.failed, c.p50_us, c.max_us] for c in run.cells]


def _worker_rows(doc: Document) -> list[list[Any]]:
    run = BurstRun.from_dict(doc)
    return [[_name(run), c.clients, i, n] for c in run.cells for i, n in enumerate(c.served)]


def _largest(run: BurstRun) -> float:
    """The time to the largest burst's last reply or failure in ms, as the burst picture draws it (NaN where it
    did not run)."""
    cells = sorted(run.cells, key=lambda c: c.clients)
    return cells[-1].wall_s * 1000 if cells else math.nan


BURST_REPEATED = Repeated(
    of="burst",
    load=BurstRun.from_dict,
    shape=BURST_RUN,
    names=each(_name),
    report=report,
    columns=("run", "clients", "wall_s", "served", "failed", "p50_us", "max_us"),
    rows=_rows,
    worker_columns=("run", "clients", "worker", "served"),
    worker_rows=_worker_rows,
    value=_largest,
    what="ms until the largest burst's last reply or failure",  # a client that failed ends it too (_largest)
)
