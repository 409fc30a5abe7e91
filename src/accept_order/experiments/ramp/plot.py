"""The ramp picture: what each step of offered load got (throughput, tail, errors)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...render.plots import PlotOptions, environment_text, legend_outside, new_figure, nothing, titled, work_text
from ...render.text import plural

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import RampResult


def _ms(us: int | None) -> float:
    return math.nan if us is None else us / 1000


def ramp_figure(result: RampResult, options: PlotOptions) -> Figure:
    fig = new_figure()
    ax = fig.add_subplot()
    settings = f"{plural(result.server.workers, 'worker')}, {work_text(result.server.work_us)}"
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
    failing = [s for s in steps if not s.held and not s.cut_short]  # a step Ctrl-C cut short did not tell
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
    legend_outside(ax, handles, ncol=len(handles))  # inside, it can cover either axis' line
    ax.grid(alpha=0.3)
    return fig
