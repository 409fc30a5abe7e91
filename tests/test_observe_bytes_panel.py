"""observe of a keep-alive pool (wrk -c6 to a Node cluster, a Puma's 20 connections) opened before the window:
the report's Load table gave each worker's held connections and bytes, but the picture drew the accepts alone, and
an accept seen in one interval only (the pool seen as observe began) was a line of one point, which matplotlib
does not draw: an empty chart beside a legend of four workers. The picture now marks each interval's share and
draws each worker's share of the bytes received per interval the load was looked at."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from accept_order.experiments.observe.plot import observe_figure
from accept_order.experiments.observe.result import ObserveResult
from accept_order.render.plots import PlotOptions

FILE = Path(__file__).parent / "data" / "first_hour_4_observe_kept.json"  # a real run's: Puma, 20 kept connections


def _axes_lines(result: ObserveResult) -> list[list[tuple[list[float], list[float], str]]]:
    figure = observe_figure(result, PlotOptions())
    try:
        return [
            [(list(ln.get_xdata()), list(ln.get_ydata()), ln.get_marker()) for ln in ax.lines] for ax in figure.axes
        ]
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)


def test_the_bytes_each_worker_s_connections_received_are_drawn_per_interval() -> None:
    result = ObserveResult.from_dict(json.loads(FILE.read_text()))
    looked = [i for i in result.intervals if sum(i.bytes_in) > 0]
    panels = _axes_lines(result)
    assert len(panels) == 3  # accepts, bytes, queue
    by_worker = panels[1][: len(result.workers)]
    for index, (ends, shares, _) in enumerate(by_worker):
        assert ends == [i.end_s for i in looked]
        assert shares == [100 * i.bytes_in[index] / sum(i.bytes_in) for i in looked]
    assert by_worker[2][1][0] == 100 * 11924 / (5192 + 8888 + 11924)  # the file's first look: 10 held of 20


def test_a_share_in_one_interval_alone_is_marked() -> None:
    result = ObserveResult.from_dict(json.loads(FILE.read_text()))
    first, *rest = result.intervals
    once = dataclasses.replace(result, intervals=[dataclasses.replace(first, accepts=(4, 6, 10)), *rest])
    shares = _axes_lines(once)[0][: len(result.workers)]
    assert [marker for _, _, marker in shares] == ["o"] * 3
    assert shares[2][1][0] == 50.0


def test_no_bytes_panel_where_no_load_was_looked_at() -> None:
    result = ObserveResult.from_dict(json.loads(FILE.read_text()))
    bare = dataclasses.replace(
        result, intervals=[dataclasses.replace(i, held=(), bytes_in=()) for i in result.intervals]
    )
    assert len(_axes_lines(bare)) == 2
