"""The burst picture: the time until every client was served (or had failed), per burst size."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ...render.plots import (
    PlotOptions,
    color,
    environment_text,
    legend_outside,
    new_figure,
    nothing,
    text,
    titled,
    work_text,
)
from ...render.text import plural
from ...servers.registry import known_by_replies
from ..own_settings import backlog_said, caps_said

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import BurstResult


def _ms(seconds: float) -> float:
    """Milliseconds on a log axis: a time of 0 (nothing measured) has no place on it."""
    return seconds * 1000 if seconds > 0 else math.nan


PACED = "* the load generator took more than half of the burst to start the connections, so it set the pace"
NOTE_PT = 11  # points from one note's baseline to the next one's in a stack (8-point text)


def _note(ax: Any, clients: int, group: list[tuple[float, str, str]], right: bool) -> None:
    """What the points of one burst size failed or were paced by, beside them: towards the middle, inside the
    axes whatever the points' place, and off their own line (which rises with the clients): above-left of
    the points on the right, below-right of those on the left. Several at one size are stacked from one
    anchor, each naming its mode, so that no note is drawn over another ("508 failed" over "464 failed")."""
    group = sorted(group, reverse=not right)  # right: the lowest point's note nearest the anchor, going up
    anchor = max(ms for ms, _, _ in group) if right else min(ms for ms, _, _ in group)
    for k, (_, mode, said) in enumerate(group):
        ax.annotate(
            f"{mode}: {said}" if len(group) > 1 else said,
            (clients, anchor),
            textcoords="offset points",
            xytext=(-8, 4 + NOTE_PT * k) if right else (8, -4 - NOTE_PT * k),
            ha="right" if right else "left",
            va="bottom" if right else "top",
            fontsize=8,
            color="C3" if "failed" in said else "0.35",
        )


def _plain(value: float) -> str:
    """A tick's value as a plain number, to the µs: 10100 and 10110, where matplotlib's LogFormatter writes any
    value past 10000 as '1e+04', so that the ticks of an axis spanning little read alike."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _plain_log(**options: Any) -> Any:
    """matplotlib's LogFormatter's choice of which ticks to label (`options` as its own), each in `_plain`."""
    from matplotlib.ticker import LogFormatter

    class PlainLogFormatter(LogFormatter):
        def __call__(self, x: float, pos: int | None = None) -> str:
            return _plain(x) if super().__call__(x, pos) else ""

    return PlainLogFormatter(**options)


def _at_least_a_decade(ax: Any) -> None:
    """Widen the time axis to a factor of 10 about its middle where its points span less: bursts that all waited
    out the 10 s timeout (10.10 and 10.15 s) were drawn at its bottom and top, as far apart as 10 ms and 10 s
    would be, under ten ticks that each read '1e+04'."""
    low, high = ax.get_ylim()
    if 0 < low < high < 10 * low:
        middle = math.sqrt(low * high)
        ax.set_ylim(middle / math.sqrt(10), middle * math.sqrt(10))


def _title(failed: bool, stopped: bool) -> str:
    """What the times end at, as the y axis says: a burst where some clients failed was not 'every client served'."""
    ends = "every client was served" + (" or had failed" if failed else "")
    return f"Time until {ends}{', or the stop' if stopped else ''} (accept-order burst)"


def burst_figure(result: BurstResult, options: PlotOptions) -> Figure:
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullFormatter

    fig = new_figure()
    ax = fig.add_subplot()
    settings = ""
    if result.runs:
        first = result.runs[0]
        settings = plural(first.server.workers, "worker")
        if not known_by_replies(first.server):  # a server elsewhere runs its own work and backlog
            settings += f", {work_text(first.server.work_us)}{backlog_said(first.server)}"
        settings += caps_said([run.server for run in result.runs])
        settings += f"; {environment_text(first.environment)}".rstrip("; ")
    caveat = [PACED] if any(c.client_bound for run in result.runs for c in run.cells) else []
    some_failed = any(c.server_failed for run in result.runs for c in run.cells)  # `failed` below: one cell's
    stopped = any(c.interrupted for run in result.runs for c in run.cells)
    titled(fig, _title(some_failed, stopped), options, settings, caveat)
    if not any(run.cells for run in result.runs):
        nothing(ax, "no bursts")
        return fig
    largest = max(c.clients for run in result.runs for c in run.cells)
    handles: list[Any] = []
    notes: dict[int, list[tuple[float, str, str]]] = {}  # burst size -> (ms, mode, what) of each point said
    # Each mode's line a little thinner and its markers a little smaller than the one before, so that a mode
    # drawn over another with the same times leaves the one beneath visible around it.
    for i, run in enumerate(result.runs):
        cells = sorted(run.cells, key=lambda c: c.clients)
        handles += ax.plot(
            [c.clients for c in cells],
            [_ms(c.wall_s) for c in cells],
            "o-",
            color=color(i),
            linewidth=max(1.0, 2.5 - 0.5 * i),
            markersize=max(3.0, 8.0 - 1.5 * i),
            label=text(run.server.label),
        )
        for cell in cells:
            failed = cell.server_failed  # those under way at a Ctrl-C were the stop's, not the server's
            if cell.wall_s <= 0 or not (failed or cell.client_bound or cell.interrupted):
                continue
            if failed:
                ax.plot(cell.clients, _ms(cell.wall_s), "x", color="C3", markersize=10, markeredgewidth=2)
            said = " ".join(
                ([f"{failed} failed"] if failed else [])
                + (["interrupted"] if cell.interrupted else [])
                + (["*"] if cell.client_bound else [])
            )
            notes.setdefault(cell.clients, []).append((_ms(cell.wall_s), text(run.server.label), said))
    stacked = max((len(group) for group in notes.values()), default=1)
    for clients, group in notes.items():
        _note(ax, clients, group, right=clients > largest / 2)
    if some_failed:
        handles.append(Line2D([], [], color="C3", marker="x", linestyle="none", markersize=8, label="some failed"))
    ax.set_xlabel("clients connecting at once")
    sizes = sorted({c.clients for run in result.runs for c in run.cells if c.clients > 0})
    if sizes and largest >= 10 * sizes[0]:  # e.g. 1000, 10000, 25000: a log axis keeps the smallest apart
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("clients connecting at once (log scale)")
    else:
        ax.set_xlim(0, largest * 1.05)
    # a log axis: the modes' times differ by factors, and a linear one squeezes the faster under the slower
    ax.set_yscale("log")
    # plain numbers (3, 10, 30), not 3×10⁰; the in-between ones labelled only where the axis spans little
    ax.yaxis.set_major_formatter(_plain_log())
    ax.yaxis.set_minor_formatter(_plain_log(labelOnlyBase=False, minor_thresholds=(1, 0.5)))
    ax.margins(y=0.15 + 0.05 * (stacked - 1))  # room for the notes above the highest point or under the lowest
    _at_least_a_decade(ax)
    if some_failed and stopped:  # on one line it ran past the figure's top and bottom edges (524 px of 500)
        ax.set_ylabel("ms from the first connect to the last reply,\nfailure or the stop (log scale)")
    else:
        ends = "last reply" + (" or failure" if some_failed else "") + (" or the stop" if stopped else "")
        ax.set_ylabel(f"ms from the first connect to the {ends} (log scale)")
    legend_outside(ax, handles)
    ax.grid(alpha=0.3, which="both")
    return fig
