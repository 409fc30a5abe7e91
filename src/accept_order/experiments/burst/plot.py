"""The burst picture: the time until every client was served, per burst size."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...render.plots import PlotOptions, color, environment_text, new_figure, nothing, text, titled, work_text
from ...render.text import plural

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import BurstResult


def _ms(us: int | None) -> float:
    return math.nan if us is None else us / 1000


def burst_figure(result: BurstResult, options: PlotOptions) -> Figure:
    fig = new_figure()
    ax = fig.add_subplot()
    settings = ""
    if result.runs:
        first = result.runs[0]
        settings = f"{plural(first.server.workers, 'worker')}, {work_text(first.server.work_us)}, backlog "
        settings += f"{first.server.backlog}; {environment_text(first.environment)}".rstrip("; ")
    titled(fig, "Time until every client was served (accept-order burst)", options, settings)
    if not any(run.cells for run in result.runs):
        nothing(ax, "no bursts")
        return fig
    for i, run in enumerate(result.runs):
        cells = sorted(run.cells, key=lambda c: c.clients)
        ax.plot(
            [c.clients for c in cells], [c.wall_s for c in cells], "o-", color=color(i), label=text(run.server.label)
        )
        for cell in cells:
            if cell.failed:
                ax.plot(cell.clients, cell.wall_s, "x", color="C3", markersize=10, markeredgewidth=2)
                ax.annotate(
                    f"{cell.failed} failed",
                    (cell.clients, cell.wall_s),
                    textcoords="offset points",
                    xytext=(6, 6),
                    fontsize=8,
                    color="C3",
                )
    ax.set_xlabel("clients connecting at once")
    ax.set_xlim(left=0)
    ax.set_ylabel("seconds from the first connect to the last reply")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    return fig
