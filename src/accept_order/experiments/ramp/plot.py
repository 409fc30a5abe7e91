"""The ramp picture: what each step of offered load got (throughput, tail, errors)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...render.plots import PlotOptions, environment_text, legend_outside, new_figure, nothing, titled, work_text
from ...render.text import plural
from ...servers.registry import known_by_replies

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import RampResult


def _ms(us: int | None) -> float:
    return math.nan if us is None else us / 1000


def _plan_text(plan: dict[str, object]) -> str:
    """How the steps were judged, for the footer: each step's length and what a step had to keep to hold (the
    picture's crosses mean it did not)."""
    step = plan.get("step_s")
    parts = [f"{step:g} s per step"] if isinstance(step, int | float) else []
    held = [f"{name} ≤ {bound:g} ms" for name, key in (("p99", "p99_ms"), ("p99.9", "p999_ms"))
            if isinstance(bound := plan.get(key), int | float)]  # fmt: skip
    errors = plan.get("max_errors")
    if isinstance(errors, int):
        held.append("no failure" if errors == 0 else f"at most {plural(errors, 'failure')}")
    parts += [f"a step held with {' and '.join(held)}"] if held else []
    return "; " + "; ".join(parts) if parts else ""


def ramp_figure(result: RampResult, options: PlotOptions) -> Figure:
    fig = new_figure()
    ax = fig.add_subplot()
    settings = plural(result.server.workers, "worker")
    if not known_by_replies(result.server):  # a server elsewhere runs its own work
        settings += f", {work_text(result.server.work_us)}"
    settings += f", maxconn {result.server.maxconn}" if result.server.maxconn else ""  # HAProxy's back-pressure
    settings += _plan_text(result.plan)
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
    p99_bound = result.plan.get("p99_ms")
    if isinstance(p99_bound, int | float):  # the bound a step's p99 was held to: where the tail broke it
        handles += [
            other.axhline(
                p99_bound, color="C1", linestyle=":", linewidth=1, label=f"p99 bound (--p99 {p99_bound:g} ms)"
            )
        ]
    other.set_ylabel("p99 latency, ms", color="C1")
    other.set_ylim(bottom=0)
    legend_outside(ax, handles, ncol=min(len(handles), 3))  # inside, it can cover either axis' line; 3 a row fit
    ax.grid(alpha=0.3)
    return fig
