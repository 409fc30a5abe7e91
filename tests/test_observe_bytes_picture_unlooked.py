"""observe's picture drew 'share of the bytes received, %' per worker from the connections a look saw alone. A real
run (tests/data/observe_gthread_unlooked.json: gunicorn, 3 gthread workers, 717 connections of 20 requests
each, 633 of them opened and closed between two looks) had 12% of the bytes received in the workers' shares; the
report said those shares 'say nothing of how the load splits', and the picture drew them without a word. The bytes
panel says what share of the bytes its lines are of, and that they say nothing where the report says so; a pool
seen whole (Puma's 20 kept connections) gets no such words."""

from __future__ import annotations

import json
from pathlib import Path

from accept_order.experiments.observe.plot import observe_figure
from accept_order.experiments.observe.result import ObserveResult
from accept_order.render.plots import PlotOptions

DATA = Path(__file__).parent / "data"


def bytes_panel_words(name: str) -> list[str]:
    result = ObserveResult.from_dict(json.loads((DATA / name).read_text()))
    figure = observe_figure(result, PlotOptions())
    try:
        assert len(figure.axes) == 3  # accepts, bytes, queue
        return [t.get_text() for t in figure.axes[1].texts]
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)


def test_bytes_shares_of_a_sliver_say_so() -> None:
    (said,) = bytes_panel_words("observe_gthread_unlooked.json")
    assert "12% of the bytes received" in said and "say nothing of how the load splits" in said, said


def test_a_pool_seen_whole_gets_no_such_words() -> None:
    assert bytes_panel_words("first_hour_4_observe_kept.json") == []
