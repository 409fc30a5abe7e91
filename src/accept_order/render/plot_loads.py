"""Load pictures: burst (time until every client was served), ramp (what each step of offered load got)
and reload (what a steady load lost when a worker went). Listed in render.plots.PLOTTERS."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .plots import PlotOptions, color, environment_text, new_figure, nothing, text, titled
from .text import plural

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..results.burst import BurstResult
    from ..results.ramp import RampResult
    from ..results.reload import ReloadResult


def _ms(us: int | None) -> float:
    return math.nan if us is None else us / 1000


def burst_figure(result: BurstResult, options: PlotOptions) -> Figure:
    fig = new_figure()
    ax = fig.add_subplot()
    settings = ""
    if result.runs:
        first = result.runs[0]
        settings = f"{plural(first.server.workers, 'worker')}, work {first.server.work_us} µs, backlog "
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


def ramp_figure(result: RampResult, options: PlotOptions) -> Figure:
    fig = new_figure()
    ax = fig.add_subplot()
    settings = f"{plural(result.server.workers, 'worker')}, work {result.server.work_us} µs"
    if result.environment is not None:
        settings += f"; {environment_text(result.environment)}"
    titled(fig, f"Throughput and p99 as the offered load grows ({result.server.label})", options, settings)
    steps = result.steps
    if not steps:
        nothing(ax, "no steps")
        return fig
    rate = steps[0].kind == "rate"
    x = [s.offered for s in steps]
    handles = ax.plot(x, [s.throughput for s in steps], "o-", color="C0", linewidth=2, label="served per second")
    if rate:
        handles += ax.plot(x, x, "--", color="0.6", linewidth=1, label="offered (new connections per second)")
    failing = [s for s in steps if not s.held]
    if failing:
        handles += ax.plot(
            [s.offered for s in failing],
            [s.throughput for s in failing],
            "x",
            color="C3",
            markersize=11,
            markeredgewidth=2,
            linestyle="none",
            label="did not hold",
        )
    ax.set_ylabel("served per second", color="C0")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("offered load, new connections per second" if rate else "offered load, connections in flight")
    other = ax.twinx()
    handles += other.plot(x, [_ms(s.p99_us) for s in steps], "s--", color="C1", label="p99 latency")
    other.set_ylabel("p99 latency, ms", color="C1")
    other.set_ylim(bottom=0)
    ax.legend(handles=handles, fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    return fig


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
