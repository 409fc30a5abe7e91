"""The ramp picture: what each step of offered load got (throughput, tail, errors)."""

from __future__ import annotations

import math
from collections.abc import Sequence
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
from ..own_settings import caps_said
from .step_verdict import KEPT_RATE

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...core.spec import ServerSpec
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
    if plan.get("rates"):  # an open-loop step also had to keep up: crossed with 0 failed and no bound broken
        held.append(f"{KEPT_RATE:.0%} of its offered rate finished")
    parts += [f"a step held with {' and '.join(held)}"] if held else []
    return "; " + "; ".join(parts) if parts else ""


def _offered(result: RampResult, rate: bool) -> str:
    """What a step offered: connections in flight, or per second new connections, or requests where the
    connections were kept (a pool's or K requests each: the plan's rates then count requests, as kept_words
    and --in-flight's help say; 'new connections per second' misnamed them)."""
    if not rate:
        return "connections in flight"
    kept = result.plan.get("requests_per_connection", 1) != 1 or bool(result.plan.get("pool"))
    return f"{'requests' if kept else 'new connections'} per second"


def _settings(result: RampResult, servers: Sequence[ServerSpec] = ()) -> str:
    """The footer: the server's settings (a server elsewhere runs its own work), the cap on accepts per wakeup of
    `servers` (a --modes round's; else its own), how a step was judged, the machine."""
    settings = plural(result.server.workers, "worker")
    if not known_by_replies(result.server):
        settings += f", {work_text(result.server.work_us)}"
    settings += caps_said(servers or [result.server])
    settings += f", maxconn {result.server.maxconn}" if result.server.maxconn else ""  # HAProxy's back-pressure
    settings += _plan_text(result.plan)
    if result.environment is not None:
        settings += f"; {environment_text(result.environment)}"
    return settings


def ramp_figure(result: RampResult, options: PlotOptions) -> Figure:
    fig = new_figure()
    ax = fig.add_subplot()
    titled(fig, f"Throughput and p99 as the offered load grows ({result.server.label})", options, _settings(result))
    steps = result.steps
    if not steps:
        nothing(ax, "no steps")
        return fig
    rate = steps[0].kind == "rate"
    x = [s.offered for s in steps]
    handles = ax.plot(x, [s.throughput for s in steps], "o-", color="C0", linewidth=2, label="served per second")
    if rate:
        handles += ax.plot(x, x, "--", color="0.6", linewidth=1, label=f"offered ({_offered(result, rate)})")
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
    ax.set_xlabel(f"offered load, {_offered(result, rate)}")
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


def ramp_rounds_figure(rounds: Sequence[Sequence[RampResult]], options: PlotOptions) -> Figure:
    """ramp --modes (and --repeat): each mode's ramp in each round, throughput above and p99 below on the same
    offered loads, a colour per mode, its steps that did not hold crossed (one point per run of its knee alone
    showed nothing of the curves: 'ramp --modes epoll,reuseport' drew two dots)."""
    from matplotlib.lines import Line2D

    fig = new_figure(height=6.4)
    top, bottom = fig.subplots(2, 1, sharex=True)
    first = rounds[0][0]
    names = [run.server.label for run in rounds[0]]
    runs = f"{len(rounds)} runs, the modes interleaved" if len(rounds) > 1 else "one run"
    title = f"Throughput and p99 as the offered load grows: {', '.join(names)} (accept-order ramp, {runs})"
    titled(fig, title, options, _settings(first, [run.server for run in rounds[0]]))
    rate = bool(first.steps) and first.steps[0].kind == "rate"
    handles: list[Any] = []
    for i, name in enumerate(names):
        for k, row in enumerate(rounds):
            run = row[i] if i < len(row) else None
            if run is None or not run.steps:
                continue
            x = [s.offered for s in run.steps]
            label = text(name) if k == 0 else None  # one legend entry per mode, whatever the rounds
            line = top.plot(x, [s.throughput for s in run.steps], "o-", color=color(i), linewidth=1.5, label=label)
            bottom.plot(x, [_ms(s.p99_us) for s in run.steps], "s--", color=color(i), linewidth=1.5)
            handles += line if k == 0 else []
            failing = [s for s in run.steps if not s.held and not s.cut_short]
            for ax, y in ((top, [s.throughput for s in failing]), (bottom, [_ms(s.p99_us) for s in failing])):
                ax.plot([s.offered for s in failing], y, "x", color="C3", markersize=10, markeredgewidth=2)
    if any(not s.held and not s.cut_short for row in rounds for run in row for s in run.steps):
        handles.append(Line2D([], [], color="C3", marker="x", linestyle="none", markersize=8, label="did not hold"))
    bound = first.plan.get("p99_ms")
    if isinstance(bound, int | float):
        handles.append(bottom.axhline(bound, color="0.4", linestyle=":", linewidth=1, label=f"--p99 {bound:g} ms"))
    top.set_ylabel("served per second")
    bottom.set_ylabel("p99 latency, ms")
    for ax in (top, bottom):
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    bottom.set_xlim(left=0)
    bottom.set_xlabel(f"offered load, {_offered(first, rate)}")
    legend_outside(top, handles, ncol=min(len(handles), 4))
    return fig
