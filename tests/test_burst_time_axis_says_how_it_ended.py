"""Review R6 of e5623cd: a burst that lost clients and was then cut short by Ctrl-C labels its time axis 'ms from
the first connect to the last reply or failure or the stop (log scale)'; on one line that ran past the figure's
top and bottom edges (524 px of a 500 px figure), so the saved picture lost both ends of it. Asserted as
test_plot_layout does: on the laid-out figure, never on pixels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accept_order.experiments.documents import plot_document

GOLDEN = Path(__file__).parent / "data" / "golden" / "burst.json"


@pytest.fixture(scope="module", autouse=True)
def _matplotlib() -> None:
    pytest.importorskip("matplotlib")


def _laid_out(errors: dict[str, int], interrupted: bool) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    data = json.loads(GOLDEN.read_text())
    data["runs"][0]["cells"][1].update(served=[10, 20], errors=errors, interrupted=interrupted, clients=50)
    fig = plot_document("burst", data)
    FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    return fig


@pytest.mark.parametrize(
    ("errors", "interrupted", "ends"),
    [
        ({"timeout": 7, "aborted": 13}, True, ("failure", "the stop")),
        ({"timeout": 20}, False, ("failure",)),
        ({"aborted": 20}, True, ("the stop",)),
    ],
)
def test_the_time_axis_says_how_a_burst_ended_inside_the_figure(
    errors: dict[str, int], interrupted: bool, ends: tuple[str, ...]
) -> None:
    fig = _laid_out(errors, interrupted)
    label = fig.axes[0].yaxis.label
    said = " ".join(label.get_text().split())
    assert said.startswith("ms from the first connect to the last reply") and all(end in said for end in ends), said
    box, edge = label.get_window_extent(fig.canvas.get_renderer()), fig.bbox
    assert edge.y0 - 1 <= box.y0 and box.y1 <= edge.y1 + 1, (said, box.extents, edge.extents)
