"""Ordering pictures: the order strip (which worker served each connection, in order) with each worker's
share beside it, for run, compare and serve."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...render.plots import (
    PlotOptions,
    environment_text,
    legend_outside,
    new_figure,
    nothing,
    text,
    titled,
    work_text,
    worker_colors,
)
from ...render.text import plural
from .compare_result import CompareResult
from .result import RunResult
from .serve_result import ServeResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MANY = 2000  # connections beyond which the strip's dots shrink and are drawn as pixels, even in an SVG


@dataclass(frozen=True)
class Strip:
    """One row of the picture: a server's serving order and per-worker counts."""

    label: str
    sequence: Sequence[int]  # serving worker of each served connection, in order
    workers: int


def _strip(ax: Any, strip: Strip, colors: Sequence[Any]) -> None:
    from matplotlib.ticker import MaxNLocator

    n = len(strip.sequence)
    ax.set_title(text(strip.label), loc="left", fontsize=9)
    ax.set_ylim(-0.6, strip.workers - 0.4)
    if strip.workers <= 16:
        ax.set_yticks(range(strip.workers))
    ax.set_ylabel("worker")
    if not n:
        ax.text(0.5, 0.5, "nothing served", ha="center", va="center", transform=ax.transAxes, color="0.4")
        return
    x = range(1, n + 1)
    many = n > MANY
    if not many:  # the path from one connection's worker to the next: round robin is a saw, LIFO a flat line
        ax.plot(x, strip.sequence, color="0.75", linewidth=0.8, zorder=1)
    dots = 2 if many else max(6.0, min(40.0, 4000 / n))
    ax.scatter(x, strip.sequence, c=[colors[w] for w in strip.sequence], s=dots, zorder=2, rasterized=many)
    ax.set_xlim(0.5, n + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # connection 1, 2, 3: never 1.5
    ax.grid(axis="x", alpha=0.3)


def _shares(ax: Any, strip: Strip, colors: Sequence[Any], key: bool) -> None:
    counts = [0] * strip.workers
    for worker in strip.sequence:
        counts[worker] += 1
    served = sum(counts) or 1
    ax.bar(range(strip.workers), [100 * c / served for c in counts], color=colors, width=0.8)
    ax.axhline(100 / strip.workers, color="0.3", linestyle="--", linewidth=1, label="even share")
    if strip.workers <= 16:
        ax.set_xticks(range(strip.workers))
    ax.set_xlabel("worker", fontsize=8)
    ax.set_ylim(0, 100)
    ax.set_ylabel("% served")
    if key:  # above the top panel, once: inside, it covered the bar of a worker that took everything
        legend_outside(ax)


def _strips_figure(strips: Sequence[Strip], title: str, settings: str, options: PlotOptions, order: str) -> Figure:
    rows = max(len(strips), 1)
    fig = new_figure(height=max(5.0, 1.3 + 1.7 * rows))
    titled(fig, title, options, settings)
    if not strips:
        nothing(fig.add_subplot(), "no runs")
        return fig
    grid = fig.add_gridspec(rows, 2, width_ratios=(3, 1))
    first = None
    for i, strip in enumerate(strips):
        ax = fig.add_subplot(grid[i, 0], sharex=first)
        first = first or ax
        colors = worker_colors(strip.workers)
        _strip(ax, strip, colors)
        _shares(fig.add_subplot(grid[i, 1]), strip, colors, key=i == 0)
        if i == len(strips) - 1:
            ax.set_xlabel(f"connection, {order}")
    return fig


def _run_strip(result: RunResult) -> Strip:
    v = result.verdict
    failed = f", {result.failed} failed" if result.failed else ""
    return Strip(
        f"{result.server.label}: {v.pattern} (Jain {v.jain:.3f}{failed})", result.sequence, result.server.workers
    )


def _run_settings(results: Sequence[RunResult]) -> str:
    if not results:
        return ""
    first = results[0]
    server = first.server
    return "; ".join(
        p
        for p in (
            plural(server.workers, "worker"),
            work_text(server.work_us),
            f"{plural(len(first.records), 'connection')} one after another",
            environment_text(first.environment),
        )
        if p
    )


def run_figure(result: RunResult, options: PlotOptions) -> Figure:
    title = f"Which worker served each connection ({result.server.label})"
    return _strips_figure([_run_strip(result)], title, _run_settings([result]), options, "in the order they were made")


def compare_figure(compared: CompareResult, options: PlotOptions) -> Figure:
    results = list(compared.runs)
    strips = [_run_strip(r) for r in results]
    title = "Which worker served each connection, per mode"
    return _strips_figure(strips, title, _run_settings(results), options, "in the order they were made")


def serve_figure(result: ServeResult, options: PlotOptions) -> Figure:
    strip = Strip(result.server.label, result.sequence, result.server.workers)
    settings = f"{plural(result.server.workers, 'worker')}; {environment_text(result.environment)}"
    title = f"Which worker accepted each connection ({result.server.label}, accept-order serve)"
    return _strips_figure([strip], title, settings, options, "in the order the workers accepted them")
