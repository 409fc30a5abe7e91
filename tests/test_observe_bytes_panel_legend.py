"""Review RF of 92a5e5e (observe's bytes panel), on the case it was made for: a keep-alive pool opened before the
window, no accept while observed. The bytes panel's lines had no legend (the accepts' panel, empty, drew none),
so nothing said which colour was which worker; and the empty panel's nothing() emptied the x ticks that sharex
shares, so 'seconds observed' had no seconds under it (the two-panel picture of an idle window too)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from accept_order.experiments.observe.plot import observe_figure
from accept_order.experiments.observe.result import ObserveResult
from accept_order.render.plots import PlotOptions

FILE = Path(__file__).parent / "data" / "first_hour_4_observe_kept.json"  # a real run's: Puma, 20 kept connections


def _figure_facts(result: ObserveResult) -> tuple[list[list[str]], list[float]]:
    """Each panel's legend texts, and the seconds under the bottom panel."""
    figure = observe_figure(result, PlotOptions())
    try:
        legends = [[t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else [] for ax in figure.axes]
        bottom = figure.axes[-1]
        low, high = bottom.get_xlim()
        return legends, [t for t in bottom.get_xticks() if low <= t <= high]
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)


def test_the_bytes_panel_names_the_workers_where_no_accept_was_drawn() -> None:
    result = ObserveResult.from_dict(json.loads(FILE.read_text()))
    assert not any(i.total for i in result.intervals)  # the pool was opened before the window
    legends, _ = _figure_facts(result)
    assert legends[0] == []  # the accepts' panel: 'no connection accepted while observed'
    assert legends[1][: len(result.workers)] == [f"{i} ({w.label})" for i, w in enumerate(result.workers)]


def test_seconds_stay_under_a_window_without_accepts() -> None:
    result = ObserveResult.from_dict(json.loads(FILE.read_text()))
    _, seconds = _figure_facts(result)
    assert len(seconds) >= 2
    bare = dataclasses.replace(
        result, intervals=[dataclasses.replace(i, held=(), bytes_in=()) for i in result.intervals]
    )
    _, seconds = _figure_facts(bare)  # two panels: nothing accepted, no load looked at
    assert len(seconds) >= 2


def test_with_accepts_the_legend_stays_on_the_accepts_panel_alone() -> None:
    result = ObserveResult.from_dict(json.loads(FILE.read_text()))
    first, *rest = result.intervals
    took = dataclasses.replace(result, intervals=[dataclasses.replace(first, accepts=(4, 6, 10)), *rest])
    legends, seconds = _figure_facts(took)
    assert legends[0][: len(result.workers)] == [f"{i} ({w.label})" for i, w in enumerate(result.workers)]
    assert legends[1] == [] and len(seconds) >= 2
