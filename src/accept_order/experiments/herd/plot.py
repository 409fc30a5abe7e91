"""The herd picture: how many workers one connection woke, per mode."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...analysis.herd import HERD_THRESHOLD
from ...render.plots import (
    PlotOptions,
    environment_text,
    legend_outside,
    new_figure,
    nothing,
    text,
    titled,
    work_text,
)
from ...render.text import plural

# a row's herd flag -> (colour, what it means)
KEY: dict[bool | None, tuple[str, str]] = {
    True: ("C3", f"a herd (at least {HERD_THRESHOLD:g} woken)"),
    False: ("C2", "no herd"),
    None: ("0.7", "not measured"),
}

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import HerdResult


def herd_figure(herd: HerdResult, options: PlotOptions) -> Figure:
    from matplotlib.patches import Patch

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
    colors = [KEY[r.herd][0] for r in rows]
    bars = ax.bar(x, heights, color=colors, width=0.7)
    ax.bar_label(bars, [f"{h:.1f}" if r.herd is not None else "n/a" for h, r in zip(heights, rows, strict=True)])
    ax.axhline(1, color="0.2", linestyle="--", linewidth=1, label="1: only the worker that accepts")
    ax.axhline(herd.workers, color="0.5", linestyle=":", linewidth=1, label=f"{herd.workers}: every worker")
    crowded = len(rows) > 6
    ax.set_xticks(x, [text(r.mode) for r in rows], rotation=30 if crowded else 0, ha="right" if crowded else "center")
    ax.set_ylabel("workers woken per served connection")
    ax.set_ylim(0, max([*heights, float(herd.workers)]) * 1.15 + 0.1)
    # the colours explained, those drawn only
    shown = [key for key in KEY if any(r.herd is key for r in rows)]
    handles: list[Any] = [Patch(color=KEY[key][0], label=KEY[key][1]) for key in shown]
    handles += ax.get_legend_handles_labels()[0]
    legend_outside(ax, handles, ncol=len(handles))
    ax.grid(axis="y", alpha=0.3)
    return fig
