"""The observe picture: each worker's share of the connections over time, of the bytes its connections received
(where the load was looked at), and the listen queue's depth."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...render.plots import (
    PlotOptions,
    environment_text,
    legend_outside,
    new_figure,
    nothing,
    text,
    titled,
    worker_colors,
)
from .judged import in_shares, judged, part_said

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import ObserveInterval, ObserveResult


def observe_figure(result: ObserveResult, options: PlotOptions) -> Figure:
    # a keep-alive pool opened before the window is accepted by nobody while observed: its load is in the bytes
    loaded = [i for i in result.intervals if i.span_s > 0 and sum(i.bytes_in) > 0]
    fig = new_figure(height=8.0 if loaded else 6.0)
    if loaded:
        share_ax, bytes_ax, queue_ax = fig.subplots(3, 1, sharex=True, height_ratios=(3, 3, 1))
    else:
        share_ax, queue_ax = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    how = "accepts, counted by the kernel" if result.traced else "connections seen, sampled (approximate)"
    settings = f"{text(result.target)}, {how}"
    if result.environment is not None:
        settings += f"; {environment_text(result.environment)}"
    titled(fig, f"Who took the connections: {result.name}, observed {result.wall_s:.0f} s", options, settings)
    intervals = [i for i in result.intervals if i.span_s > 0]
    if not intervals or not any(i.total for i in intervals):
        # none accepted is not none there: connections opened before the window may carry all the traffic
        seen = sum(w.connections_observed or 0 for w in result.workers)
        held = f"; {seen:,} opened before it were seen held" if seen else ""
        nothing(share_ax, f"no connection accepted while observed{held}")
        from matplotlib.ticker import AutoLocator  # here: matplotlib is imported only where a picture is drawn

        # nothing() empties the panel's ticks, which sharex shares: the seconds below lost theirs too
        share_ax.xaxis.set_major_locator(AutoLocator())
        share_ax.tick_params(axis="x", which="both", bottom=False)
    else:
        ends = [i.end_s for i in intervals]
        colors = worker_colors(len(result.workers))  # as the order pictures colour workers: none shares one
        for index, worker in enumerate(result.workers):
            shares = [100 * i.accepts[index] / i.total if i.total else float("nan") for i in intervals]
            label = text(f"{index} ({worker.label})")
            # a marker on each interval: a share in one interval alone (a pool seen as it opened) is no line
            share_ax.plot(ends, shares, "-o", color=colors[index], linewidth=1.5, markersize=3, label=label)
        share_ax.axhline(100 / len(result.workers), color="0.6", linestyle="--", linewidth=1, label="an even share")
        share_ax.set_ylim(0, 100)
        share_ax.set_ylabel("share of the interval's connections, %")
        # beside the lines (a worker's share can reach any height), a column per 16 workers
        legend_outside(share_ax, right=True, ncol=1 + (len(result.workers) - 1) // 16)
        share_ax.grid(alpha=0.3)
    if loaded:
        _bytes_panel(bytes_ax, loaded, result)
        if not share_ax.lines:  # the bytes' lines alone say which worker is which: their colours are named here
            legend_outside(bytes_ax, right=True, ncol=1 + (len(result.workers) - 1) // 16)
    sampled = [i for i in intervals if i.queue_max is not None]
    if sampled:
        ends = [i.end_s for i in sampled]
        queue_ax.plot(ends, [i.queue_max for i in sampled], "-", color="C3", label="most waiting")
        queue_ax.plot(ends, [i.queue_mean for i in sampled], "--", color="C0", label="mean")
        legend_outside(queue_ax, right=True)
    queue_ax.set_ylim(bottom=0)
    queue_ax.set_ylabel("listen queue")
    queue_ax.set_xlabel("seconds observed")
    queue_ax.grid(alpha=0.3)
    return fig


def _bytes_panel(ax: Any, loaded: Sequence[ObserveInterval], result: ObserveResult) -> None:
    """Each worker's share of the bytes its connections received in each interval the load was looked at: what
    the held connections carried, which the accepts of a pool opened before the window do not show. Labelled as
    the accepts' lines are, for the legend where no accept was drawn."""
    ends = [i.end_s for i in loaded]
    workers = len(result.workers)
    colors = worker_colors(workers)
    for index, worker in enumerate(result.workers):
        shares = [100 * i.bytes_in[index] / sum(i.bytes_in) for i in loaded]
        label = text(f"{index} ({worker.label})")
        ax.plot(ends, shares, "-o", color=colors[index], linewidth=1.5, markersize=3, label=label)
    ax.axhline(100 / workers, color="0.6", linestyle="--", linewidth=1, label="an even share")
    ax.set_ylim(0, 100)
    ax.set_ylabel("share of the bytes received, %")
    ax.grid(alpha=0.3)
    # the bytes of connections that opened and closed between two looks are in no worker's share: where they
    # are most of the load (gunicorn's 20-request connections: 88%), the lines are a sliver's split, as the
    # report says; said here too, the picture being read without it
    bytes_ = in_shares(result)
    if bytes_ is not None and 0 < bytes_[0] < bytes_[1]:
        part = f"only the connections a look saw: {part_said(*bytes_)} of the bytes received"
        said = f"{part}; these shares say nothing of how the load splits" if not judged(result) else part
        ax.text(0.01, 0.97, said, transform=ax.transAxes, va="top", fontsize=8, color="0.3")
