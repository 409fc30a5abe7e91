"""The inspect picture: the listeners on the left, the workers on the right, a line from each worker to
each listener it waits on (the acceptor's workers joined to it instead); the mechanism in the title."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...render.plots import PlotOptions, color, environment_text, new_figure, nothing, text, titled

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import InspectResult


LEGEND = "waits on: solid, or dashed with EPOLLEXCLUSIVE; dotted: gets its connections from the acceptor"


def _spread(n: int) -> list[float]:
    """Heights from the top down, so that the first listener and w0 are at the top."""
    return [0.5] if n == 1 else [0.9 - 0.8 * i / (n - 1) for i in range(n)]


def inspect_figure(result: InspectResult, options: PlotOptions) -> Figure:
    fig = new_figure()
    ax = fig.add_subplot()
    m = result.mechanism
    name = m.name or "not seen"
    if result.recognised and m.modes:
        name += f" ({result.recognised}'s {' or '.join(m.modes)})"
    titled(fig, f"{result.recognised or result.program}: {name}", options, environment_text(result.environment))
    ax.set_axis_off()
    if not result.listeners or not result.units:
        nothing(ax, "no worker waits on a listener")
        return fig
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    left = dict(zip((r.inode for r in result.listeners), _spread(len(result.listeners)), strict=True))
    right = dict(zip((u.label for u in result.units), _spread(len(result.units)), strict=True))
    for row in result.listeners:
        ax.text(0.2, left[row.inode], text(row.where) + f"\ninode {row.inode}", ha="right", va="center", fontsize=8)
    acceptor = next((u for u in result.units if u.role == "acceptor"), None)
    for i, unit in enumerate(result.units):
        y = right[unit.label]
        ax.text(0.8, y, f"{unit.label} pid {unit.pid}\n" + text(unit.call), ha="left", va="center", fontsize=8)
        if unit.role == "fed" and acceptor is not None:
            ax.plot([0.78, 0.6], [y, right[acceptor.label]], color="0.5", linestyle=":")  # passed by the acceptor
            continue
        for row in result.listeners:
            if unit.label in row.waited_by:
                exclusive = "EPOLLEXCLUSIVE" in unit.on and "no EPOLLEXCLUSIVE" not in unit.on
                ax.plot([0.22, 0.78], [left[row.inode], y], color=color(i), linestyle="--" if exclusive else "-")
    ax.text(0.5, 0.0, LEGEND, ha="center", va="bottom", fontsize=7, color="0.4")
    return fig
