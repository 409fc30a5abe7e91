"""Where the workers' shares hold less than 1% of the bytes received (nginx's short connections: 0.01% to 0.2%, most
connections opened and closed between two looks), the picture's bytes panel (e41c543) and the sleeps line (a54678c)
said '0% of the bytes received', as though the lines and the figure rested on none; the report's own line said 'less
than 1%'. All three say it alike now (judged.part_said). A real run's file (gunicorn gthread, 12% in the shares) with
the bytes of its unlooked connections made 100 times as many."""

from __future__ import annotations

import json
from pathlib import Path

from accept_order.experiments.observe.plot import observe_figure
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import sleeps
from accept_order.render.plots import PlotOptions

DATA = Path(__file__).parent / "data" / "observe_gthread_unlooked.json"


def sliver() -> ObserveResult:
    data = json.loads(DATA.read_text())
    data["closed_unlooked_bytes_in"] *= 100  # 805,881 -> 80.6 MB: the shares' 105,812 bytes are 0.13%
    return ObserveResult.from_dict(data)


def test_the_bytes_panel_says_less_than_one_percent() -> None:
    figure = observe_figure(sliver(), PlotOptions())
    try:
        (said,) = [t.get_text() for t in figure.axes[1].texts]
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)
    assert "only the connections a look saw: less than 1% of the bytes received" in said, said


def test_the_sleeps_line_says_less_than_one_percent() -> None:
    said = sleeps(sliver())
    assert said is not None and "the looks saw, less than 1% of the bytes received" in said, said
