"""observe of a Puma whose 20 keep-alive connections (wrk's) were opened before the window: the report said no
connection was accepted and showed what the 20 carried (8,205 requests in the server's log), while its picture
said 'no connections while observed'. It says none was accepted, and how many opened before were seen held."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from accept_order.experiments.observe.plot import observe_figure
from accept_order.experiments.observe.result import ObserveResult
from accept_order.render.plots import PlotOptions

FILE = Path(__file__).parent / "data" / "first_hour_4_observe_kept.json"  # a real run's, see above


def _said(result: ObserveResult) -> list[str]:
    figure = observe_figure(result, PlotOptions())
    try:
        return [t.get_text() for ax in figure.axes for t in ax.texts]
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)


def test_connections_opened_before_the_window_are_not_called_none() -> None:
    result = ObserveResult.from_dict(json.loads(FILE.read_text()))
    assert sum(w.connections_observed or 0 for w in result.workers) == 20
    assert "no connection accepted while observed; 20 opened before it were seen held" in _said(result)
    idle = dataclasses.replace(result, workers=[dataclasses.replace(w, connections_observed=0) for w in result.workers])
    assert "no connection accepted while observed" in _said(idle)
