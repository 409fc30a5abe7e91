"""The herd picture: how many workers one connection woke, per mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...render.plots import PlotOptions, environment_text, new_figure, nothing, text, titled, work_text
from ...render.text import plural

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import HerdResult


def herd_figure(herd: HerdResult, options: PlotOptions) -> Figure:

    rows = herd.rows
    fig = new_figure()
    ax = fig.add_subplot()
    settings = f"{plural(herd.workers, 'worker')}, {plural(herd.connections, 'connection')}, {work_text(herd.work_us)}"
    if herd.runs:
        settings += f"; {environment_text(herd.runs[0].environment)}"
    titled(fig, "Workers woken per connection (the thundering herd)", options, settings)
    if not rows:
        nothing(ax, "no runs")
        return fig
    x = list(range(len(rows)))
    heights = [r.woken_per_connection or 0.0 for r in rows]
    # red: a herd (at least HERD_THRESHOLD woken per connection); green: none; grey: not measured
    colors = ["0.7" if r.herd is None else "C3" if r.herd else "C2" for r in rows]
    bars = ax.bar(x, heights, color=colors, width=0.7)
    ax.bar_label(bars, [f"{h:.1f}" if r.herd is not None else "n/a" for h, r in zip(heights, rows, strict=True)])
    ax.axhline(1, color="0.2", linestyle="--", linewidth=1, label="1: only the worker that accepts")
    ax.axhline(herd.workers, color="0.5", linestyle=":", linewidth=1, label=f"{herd.workers}: every worker")
    crowded = len(rows) > 6
    ax.set_xticks(x, [text(r.mode) for r in rows], rotation=30 if crowded else 0, ha="right" if crowded else "center")
    ax.set_ylabel("workers woken per served connection")
    ax.set_ylim(0, max([*heights, float(herd.workers)]) * 1.15 + 0.1)
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    return fig
