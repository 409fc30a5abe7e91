"""The picture of a repeated comparison: each variant's figure in every round, so the spread and the
rounds that disagree are seen (the figure the repeated experiment names: Repeated.value and .what)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...render.plots import PlotOptions, color, environment_text, legend_outside, new_figure, nothing, text, titled

MARKERS = ("o", "s", "^", "D", "v", "P", "X")

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import RepeatResult


def repeat_figure(repeated: RepeatResult, options: PlotOptions) -> Figure:
    from .kinds import first_environment, repeated_of
    from .report import shown_rounds

    kind = repeated_of(repeated.of)  # the experiment says what to draw
    rounds: list[list[Any]] = shown_rounds(kind, repeated)  # those the report shows (a stop's cut round alone)
    if kind.figure is not None and rounds:
        return kind.figure(rounds, options)
    fig = new_figure()
    ax = fig.add_subplot()
    env = first_environment(kind, rounds) if rounds and rounds[0] else None
    what = kind.what
    command = kind.command or kind.of
    title = f"{what} in each of {len(rounds)} interleaved runs (accept-order {command} --repeat)"
    titled(fig, title, options, environment_text(env))
    if not rounds:
        nothing(ax, "no round finished")
        return fig
    labels = kind.names(rounds[0])
    for i, label in enumerate(labels):
        values = []
        for row in rounds:
            result = row[i] if i < len(row) else None
            values.append(float("nan") if result is None else kind.value(result))
        # each variant thinner and with a smaller, other marker than the one before: variants with the same
        # figure (two that lost nothing) stay visible one over the other
        ax.plot(
            range(1, len(values) + 1),
            values,
            "-",
            marker=MARKERS[i % len(MARKERS)],
            markersize=max(3.0, 9.0 - 1.5 * i),
            linewidth=max(1.0, 2.5 - 0.5 * i),
            color=color(i),
            label=text(label),
            clip_on=False,  # a marker at 0 (nothing lost) drawn whole, not halved by the axis
        )
    ax.set_xlabel("run")
    ax.set_xticks(range(1, len(rounds) + 1))
    ax.set_ylabel(what)
    ax.set_ylim(bottom=0)
    legend_outside(ax, ncol=min(len(labels), 4))
    ax.grid(alpha=0.3)
    return fig
