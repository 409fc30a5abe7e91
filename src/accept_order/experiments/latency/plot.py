"""Latency pictures: mmhistogram's log2 buckets as overlaid step lines (or a CDF), and the sweep's p99
and throughput against the accept batch."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.histogram import LatencyHistogram, log2_buckets
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
from ...render.text import duration_us, durations_us, plural
from ...servers.registry import known_by_replies
from ..own_settings import caps_said
from .result import LatencyCompareResult, LatencyResult, SweepResult, default_title

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.typing import LineStyleType

# (label, percentile, line style of its vertical mark)
MARKS: tuple[tuple[str, float, LineStyleType], ...] = (("p50", 50.0, ":"), ("p99", 99.0, "--"), ("p99.9", 99.9, "-."))


def settings_text(results: Sequence[LatencyResult], caps: bool = True) -> str:
    """What the runs were measured with (the first run's settings: a comparison shares them), and the caps on
    accepts per wakeup they ran with (`caps`; a sweep's axis says its own)."""
    if not results:
        return ""
    first = results[0]
    server, load = first.server, first.load
    work = work_text(server.work_us, server.work_iters)
    if server.attach or known_by_replies(server):  # a server this tool did not start: its work is its own
        work = "the server's own work"
    if load.connections is not None:
        amount = plural(load.connections, "connection")
    elif server.work_us:  # the work and how long the load ran, in one unit
        work_us, amount = durations_us(server.work_us, (load.duration_s or 0) * 1e6)
        work = work.replace(duration_us(server.work_us), work_us, 1)
    else:
        amount = durations_us((load.duration_s or 0) * 1e6)[0]
    rate = f" at {load.rate:g}/s" if load.rate else ""
    planned = " planned" if any(r.interrupted for r in results) else ""  # the legend says where each stopped
    most = "at most " if load.rate else ""  # an open loop keeps no more than that many in flight
    hosts = f" from {plural(len(first.hosts), 'client host')}" if first.hosts else ""
    parts = [
        plural(server.workers, "worker") + (" (pinned)" if server.cpus else ""),
        work + (caps_said([r.server for r in results]) if caps else ""),
        f"{amount}{rate}{planned}, {most}{load.concurrency} in flight{hosts}",
        environment_text(first.environment),
    ]
    return "; ".join(p for p in parts if p)


_RUN: dict[str, Any] = {"linewidth": 1.8}
_HOST: dict[str, Any] = {"linewidth": 1.1, "linestyle": (0, (4, 2))}  # thinner and dashed beside the whole run's


@dataclass(frozen=True)
class Series:
    """One line of a latency picture: a histogram and its colour's index; `name` a client host's destination
    (its own durations, beside the whole run's), empty for a run."""

    histogram: LatencyHistogram
    colour: int
    name: str = ""
    lost: str | None = None  # a client host's: why it stopped reporting (its durations stayed with it)

    @property
    def line(self) -> dict[str, Any]:
        """How its line is drawn: a host's thinner and dashed beside the run's."""
        return _HOST if self.name else _RUN


def _host_series(results: Sequence[LatencyResult]) -> list[Series]:
    """A single run from several client hosts: each host's own durations too (a slow or far host shows as a
    line of its own). Beside other runs (a comparison) they would crowd the picture: the runs only."""
    if len(results) != 1 or len(results[0].hosts) < 2:
        return []
    return [Series(h.histogram, i + 1, h.destination, h.lost) for i, h in enumerate(results[0].hosts)]


def _host_label(host: Series) -> str:
    """A client host's legend entry: its figures; a lost host's say why (what it served before it was lost
    is in its reason, its durations never came back: not 'nothing served')."""
    figures = _figures(host.histogram)
    if host.lost is not None:
        none = "" if figures else "; none of its durations are in the figures"
        return f"from {text(host.name)}: lost: {text(host.lost)}{none}" + (f"; {figures}" if figures else "")
    return f"from {text(host.name)}: {figures or 'nothing served'}"


def _marks(result: LatencyResult) -> list[tuple[str, float, LineStyleType]]:
    if not result.histogram.count:
        return []
    return [(name, result.histogram.percentile(q) / 1000, style) for name, q, style in MARKS]


def _figures(histogram: LatencyHistogram) -> str:
    if not histogram.count:
        return ""
    return ", ".join(f"{name} {histogram.percentile(q) / 1000:.2f}" for name, q, _ in MARKS) + " ms"


def _legend_label(result: LatencyResult) -> str:
    # a run Ctrl-C cut short holds fewer connections than the footer's plan says: said beside its figures
    unit = "request" if result.load.keeps_connections else "connection"  # a pool's 8 connections carried 3841
    cut = f" (interrupted after {plural(result.driven, unit)})" if result.interrupted else ""
    return f"{text(result.server.label)}: {_figures(result.histogram) or 'nothing served'}{cut}"


def _bucket_axis(v: Any) -> Any:
    """ms -> axis position: 0..1 ms linear (bucket 0), then one unit per doubling (1, 2, 4, 8...)."""
    import numpy as np

    v = np.asarray(v, dtype=float)
    return np.where(v <= 1, v, 1 + np.log2(np.maximum(v, 1)))


def _bucket_axis_inverse(x: Any) -> Any:
    import numpy as np

    x = np.asarray(x, dtype=float)
    return np.where(x <= 1, x, np.exp2(np.clip(x, 1, 1000) - 1))


def _timed(results: Sequence[LatencyResult]) -> str:
    """What each duration times: a request where the load kept its connections (a pool's histogram counts its
    requests, each timed over its connection: 745 requests over 16 connections read 'connections' up the axis),
    else a connection."""
    units = {"requests" if r.load.keeps_connections else "connections" for r in results}
    return units.pop() if len(units) == 1 else "connections or requests"


def _histogram(ax: Any, series: Sequence[Series], timed: str = "connections") -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter

    per_run = [[count for _, count in log2_buckets(s.histogram)] for s in series]
    n = max([2, *(len(b) for b in per_run)])  # at least 0..1 and 1..2 ms, so one full bucket has context
    edges = [0, *(1 << i for i in range(n))]  # bucket 0: 0..1 ms; bucket i: 2**(i-1)..2**i ms
    ax.set_xscale("function", functions=(_bucket_axis, _bucket_axis_inverse))
    runs = sum(1 for one in series if not one.name)
    for one, counts in zip(series, per_run, strict=True):
        if not counts:
            continue
        counts = counts + [0] * (n - len(counts))
        if runs == 1 and not one.name:  # overlaid fills would muddy each other; a host's line is drawn over it
            ax.stairs(counts, edges, color=color(one.colour), fill=True, alpha=0.15)
        ax.stairs(counts, edges, color=color(one.colour), **one.line)
    ax.set_xlim(0, edges[-1])
    ax.xaxis.set_major_locator(FixedLocator(edges))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_xlabel("duration, ms (mmhistogram's log2 buckets: 0–1, 1–2, 2–4, 4–8, ...)")
    ax.set_ylabel(timed)
    ax.set_ylim(bottom=0)


def _cdf(ax: Any, series: Sequence[Series], timed: str = "connections") -> None:
    import numpy as np
    from matplotlib.ticker import FuncFormatter

    for one in series:
        pairs = one.histogram.to_dict()["counts"]
        if not pairs:
            continue
        # 0 µs has no place on a log axis: draw it at 1 µs
        values = np.array([max(us, 1) / 1000 for us, _ in pairs], dtype=float)
        shares = np.cumsum([n for _, n in pairs], dtype=float) / one.histogram.count
        x, y = np.concatenate(([values[0]], values)), np.concatenate(([0.0], shares))
        # a run's step line keeps matplotlib's own width, as before hosts were drawn
        ax.step(x, y, where="post", color=color(one.colour), **(one.line if one.name else {}))
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("duration, ms (log scale)")
    ax.set_ylabel(f"share of {timed} this fast or faster")


def _latency_figure(results: Sequence[LatencyResult], title: str, options: PlotOptions) -> Figure:
    from matplotlib.lines import Line2D

    lines = len(results) + len(_host_series(results))
    fig = new_figure(height=5.0 + 0.2 * max(0, lines - len(MARKS)))  # the legend's rows above the axes
    ax = fig.add_subplot()
    titled(fig, title, options, settings_text(results))
    if not any(r.histogram.count for r in results):
        nothing(ax, "nothing was served" if results else "no runs")
        return fig
    hosts = _host_series(results)
    series = [*(Series(r.histogram, i) for i, r in enumerate(results)), *hosts]
    (_cdf if options.cdf else _histogram)(ax, series, _timed(results))
    handles: list[Any] = []
    for i, result in enumerate(results):
        for _, ms, style in _marks(result):
            ax.axvline(ms, color=color(i), linestyle=style, linewidth=1.1)
        handles.append(Line2D([], [], color=color(i), linewidth=1.8, label=_legend_label(result)))
    for host in hosts:
        handles.append(Line2D([], [], color=color(host.colour), label=_host_label(host), **host.line))
    marks = [Line2D([], [], color="0.3", linestyle=style, linewidth=1.1, label=name) for name, _, style in MARKS]
    # above the axes, the runs in the first column and the marks' styles in the second: inside, "best" still
    # covered a percentile's mark or the top of a bucket
    rows = max(len(handles), len(marks))
    blank = Line2D([], [], linestyle="none", label=" ")
    legend_outside(ax, [*handles, *[blank] * (rows - len(handles)), *marks, *[blank] * (rows - len(marks))], ncol=2)
    ax.grid(axis="y", alpha=0.3)
    return fig


def latency_figure(result: LatencyResult, options: PlotOptions) -> Figure:
    return _latency_figure([result], result.title or default_title(result.server, load=result.load), options)


def latency_compare_figure(compared: LatencyCompareResult, options: PlotOptions) -> Figure:
    results = list(compared.runs)
    titles = list(dict.fromkeys(r.title for r in results if r.title))
    # Each run's default title names its own mode; one title shared by every run was given with --title.
    if len(titles) == 1 and len(results) > 1:
        title = titles[0]
    else:
        title = f"Duration in ms ({', '.join(r.server.label for r in results)})"
    return _latency_figure(results, title, options)


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def sweep_figure(sweep: SweepResult, options: PlotOptions) -> Figure:
    results = list(sweep.runs)
    fig = new_figure()
    ax = fig.add_subplot()
    labels = list(dict.fromkeys(r.server.label for r in results))
    titled(fig, f"p99 and throughput by accept batch ({', '.join(labels)})", options, settings_text(results, False))
    if not results:
        nothing(ax, "no runs")
        return fig
    x = list(range(len(results)))
    p99 = [_nan(r.percentile_ms(99)) for r in results]
    p50 = [_nan(r.percentile_ms(50)) for r in results]
    (line99,) = ax.plot(x, p99, "o-", color="C3", linewidth=2, label="p99 latency")
    (line50,) = ax.plot(x, p50, "o:", color="C3", alpha=0.6, label="p50 latency")
    ax.set_ylabel("latency, ms", color="C3")
    ax.set_ylim(bottom=0)
    ax.set_xticks(x, [str(r.server.accept_batch) if r.server.accept_batch else "no limit" for r in results])
    ax.set_xlabel("accept batch: most connections one wakeup accepts")
    other = ax.twinx()
    (line_tps,) = other.plot(x, [r.throughput for r in results], "s-", color="C0", linewidth=2, label="throughput")
    other.set_ylabel(f"throughput, {_timed(results)}/s", color="C0")  # a pool's: requests
    other.set_ylim(bottom=0)
    legend_outside(ax, [line99, line50, line_tps])  # "best" knows only one of the two axes' lines
    ax.grid(alpha=0.3)
    return fig
