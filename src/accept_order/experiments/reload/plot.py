"""The reload picture: what a steady load lost when a worker went, per run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...render.plots import PlotOptions, environment_text, new_figure, nothing, text, titled
from ...render.text import plural

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import ReloadResult


def reload_figure(result: ReloadResult, options: PlotOptions) -> Figure:
    runs = result.runs
    fig = new_figure(height=max(5.0, 1.5 + 0.45 * len(runs)))
    ax = fig.add_subplot()
    settings = ""
    if runs:
        first = runs[0]
        settings = f"{plural(first.server.workers, 'worker')}, {first.load.concurrency} in flight; "
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
    # green: within what the kernel promises; red: not; grey: it promises nothing here
    colors = ["0.6" if r.as_expected is None else "C2" if r.as_expected else "C3" for r in runs]
    bars = ax.barh(y, failed, color=colors, height=0.6)
    ax.bar_label(bars, [f"{r.failed} of {r.driven}" for r in runs], padding=3, fontsize=8)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()  # the table's order, top to bottom
    ax.set_xlim(0, max(max(failed) * 1.25, 1))
    ax.set_xlabel(
        "connections failed (of those driven); green: within what the kernel promises, red: beyond it, "
        "grey: it promises nothing"
    )
    ax.grid(axis="x", alpha=0.3)
    return fig
