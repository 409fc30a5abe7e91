"""Review R6 of 170025c: the ramp picture's footer says what a step had to keep to hold, and an open-loop step
had to keep up too (ramp/step_verdict.py judge: fewer than KEPT_RATE of its offered rate finished is a step that did not
hold). 'ramp --modes epoll,reuseport --rates 200,400,800' crossed epoll's 800/s with 0 failed and no --p99 under
a footer of 'a step held with no failure', which those crosses contradict. A closed loop has no such rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accept_order.experiments.documents import plot_document

GOLDEN = Path(__file__).parent / "data" / "golden"


@pytest.fixture(scope="module", autouse=True)
def _matplotlib() -> None:
    pytest.importorskip("matplotlib")


def _footer(name: str, plan: dict[str, object]) -> str:
    data = json.loads((GOLDEN / f"{name}.json").read_text())
    for run in data["runs"] if "runs" in data else [data]:
        run["plan"].update(plan)
    figure = plot_document(name, data)
    return " ".join(figure._supxlabel.get_text().split())  # the settings line (render/plots.titled)


def test_an_open_loop_step_held_only_if_it_kept_up() -> None:
    footer = _footer("ramp", {"rates": [50.0, 100.0], "max_errors": 0})
    assert "a step held with no failure and 90% of its offered rate finished" in footer, footer


def test_a_closed_loop_step_has_no_rate_to_keep() -> None:
    footer = _footer("ramp", {"rates": [], "concurrencies": [4, 64], "max_errors": 0})
    assert "a step held with no failure;" in footer and "offered rate" not in footer, footer
