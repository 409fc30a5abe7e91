"""The reload picture: what a steady load lost when a worker went, per run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...render.plots import PlotOptions, environment_text, legend_outside, new_figure, nothing, text, titled, work_text
from ...render.text import plural
from ..own_settings import caps_said

# as_expected -> (colour, what it means)
KEY: dict[bool | None, tuple[str, str]] = {
    True: ("C2", "within what the kernel promises"),
    False: ("C3", "beyond what the kernel promises"),
    None: ("0.6", "the kernel promises nothing here"),
}

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import ReloadResult


def reload_figure(result: ReloadResult, options: PlotOptions) -> Figure:
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    runs = result.runs
    fig = new_figure(height=max(5.0, 1.5 + 0.45 * len(runs)))
    ax = fig.add_subplot()
    settings = ""
    if runs:
        first = runs[0]
        # the cap on accepts per wakeup, as reload's report says it (a run capped at 4 read as one without)
        caps = caps_said([r.server for r in runs])
        settings = f"{plural(first.server.workers, 'worker')}, {work_text(first.server.work_us)}{caps}, "
        settings += f"{first.load.concurrency} in flight; "
        settings += environment_text(first.environment)
    titled(fig, "What a steady load lost when one worker went (accept-order reload)", options, settings)
    if not runs:
        nothing(ax, "no runs")
        return fig
    labels = [
        text(f"{r.server.label} {r.how}" + (f", migrate {r.migrate}" if r.queue == "per-worker" else "")) for r in runs
    ]
    y = list(range(len(runs)))
    failed = [r.failed for r in runs]
    colors = [KEY[r.as_expected][0] for r in runs]
    bars = ax.barh(y, failed, color=colors, height=0.6)
    # a run that lost nothing has no bar: its label carries its colour
    labels_drawn = ax.bar_label(bars, [f"{r.failed} of {r.driven}" for r in runs], padding=3, fontsize=8)
    for label, shade in zip(labels_drawn, colors, strict=True):
        label.set_color("0.35" if shade == KEY[None][0] else shade)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()  # the table's order, top to bottom
    ax.set_xlim(0, max(max(failed) * 1.25, 1))
    ax.set_xlabel("connections failed (of those driven)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # a count: no tick at 0.5 or 1.5 connections
    # the colours explained, those drawn only
    shown = [key for key in KEY if any(r.as_expected is key for r in runs)]
    legend_outside(ax, [Patch(color=KEY[key][0], label=KEY[key][1]) for key in shown])
    ax.grid(axis="x", alpha=0.3)
    return fig
