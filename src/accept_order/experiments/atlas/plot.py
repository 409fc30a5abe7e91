"""The atlas picture: the busiest worker's share under load, per server and mode (even share: a line)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...render.plots import PlotOptions, color, environment_text, legend_outside, new_figure, nothing, text, titled
from .report import by_server_and_mode, median_known

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import AtlasResult


def atlas_figure(result: AtlasResult, options: PlotOptions) -> Figure:
    from matplotlib.patches import Patch

    fig = new_figure()
    ax = fig.add_subplot()
    env = environment_text(result.environment) if result.environment else ""
    titled(fig, "The busiest worker's share under load (accept-order atlas)", options, env)
    groups = [rows for rows in by_server_and_mode(result) if any(r.busiest is not None for r in rows)]
    if not groups:
        nothing(ax, "no server was measured under load")
        return fig
    labels = [text(f"{rows[0].server} {rows[0].mode}") for rows in groups]
    shares = [median_known([r.busiest for r in rows]) or 0.0 for rows in groups]
    servers = sorted({rows[0].server for rows in groups})
    colors = [color(servers.index(rows[0].server)) for rows in groups]
    ax.barh(range(len(groups)), shares, color=colors)
    ax.set_yticks(range(len(groups)), labels)
    ax.invert_yaxis()
    workers = int(result.settings.get("workers", 0))
    if workers:
        ax.axvline(1 / workers, color="grey", linestyle="--", linewidth=1, label=f"even share (1/{workers})")
    # one colour per server, named: the bars of one server's modes go together
    handles: list[Any] = [Patch(color=color(i), label=text(server)) for i, server in enumerate(servers)]
    handles += ax.get_legend_handles_labels()[0]
    legend_outside(ax, handles, ncol=len(handles))
    ax.set_xlim(0, 1)
    ax.set_xlabel("busiest worker's share of the connections served")
    return fig
