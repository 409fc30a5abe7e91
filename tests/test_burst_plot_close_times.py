"""The burst picture of bursts whose times lie close together (both waited out the 10 s timeout: 10.10 and 10.15 s,
as `burst --modes epoll,reuseport --clients 2000 --backlog 64` measured here) labelled its time axis with ten ticks
that each read '1e+04' and drew the two points at its bottom and top, as far apart as 10 ms and 10 s would be.
Its labels now read as the numbers they stand at, and the axis spans at least a factor of 10."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accept_order.experiments.documents import plot_document

GOLDEN = Path(__file__).parent / "data" / "golden"


@pytest.fixture(scope="module")
def matplotlib() -> Any:
    return pytest.importorskip("matplotlib")


def _axis(walls: list[float]) -> Any:
    """The time axis of the golden burst picture, each run's last cell given its wall time (s) and failures."""
    data = json.loads(GOLDEN.joinpath("burst.json").read_text())
    for run, wall in zip(data["runs"], walls, strict=True):
        run["cells"] = [dict(run["cells"][-1], clients=2000, wall_s=wall, errors={"timeout": 300})]
    figure = plot_document("burst", data)
    figure.canvas.draw()
    return figure.axes[0]


def _labels(ax: Any) -> list[tuple[float, str]]:
    low, high = ax.get_ylim()
    ticks = ax.yaxis.get_majorticklabels() + ax.yaxis.get_minorticklabels()
    return [(t.get_position()[1], t.get_text()) for t in ticks if t.get_text() and low <= t.get_position()[1] <= high]


@pytest.mark.parametrize("walls", [[10.097533, 10.150041], [0.0031, 0.0032], [250.0, 250.5]])
def test_each_label_reads_as_the_time_it_stands_at(matplotlib: Any, walls: list[float]) -> None:
    labels = _labels(_axis(walls))
    assert len(labels) >= 2, labels
    for at, said in labels:
        assert float(said) == pytest.approx(at, rel=1e-6) and "e" not in said, labels


@pytest.mark.parametrize("walls", [[10.097533, 10.150041], [0.0031, 0.0032]])
def test_close_times_are_drawn_close(matplotlib: Any, walls: list[float]) -> None:
    low, high = _axis(walls).get_ylim()
    assert high / low >= 10 * 0.999, (low, high)


def test_times_a_decade_apart_keep_the_axis_they_had(matplotlib: Any) -> None:
    low, high = _axis([0.01, 2.0]).get_ylim()
    assert low < 10 < 2000 < high and high / low < 10 * 200 * 2, (low, high)
