"""The ramp picture marks a step Ctrl-C cut short as the report does: not as one that did not hold (it neither
held nor broke); a step that had already failed when cut short is marked, as the report names it the knee."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accept_order.experiments.ramp.result import RampResult

GOLDEN = Path(__file__).parent / "data" / "golden" / "ramp.json"


def marked(reasons: list[str]) -> list[float]:
    """The offered loads the picture marks "did not hold", for the golden ramp (50/s and 100/s held) with a
    third step at 200/s that Ctrl-C cut short, having shown `reasons` by then."""
    pytest.importorskip("matplotlib")
    from accept_order.experiments.ramp.plot import ramp_figure
    from accept_order.render.plots import PlotOptions

    doc = json.loads(GOLDEN.read_text())
    doc["steps"].append(dict(doc["steps"][-1], offered=200.0, interrupted=True, reasons=reasons))
    doc["interrupted"] = True
    fig: Any = ramp_figure(RampResult.from_dict(doc), PlotOptions())
    lines = [line for line in fig.axes[0].get_lines() if line.get_label() == "did not hold"]
    return [float(x) for line in lines for x in line.get_xdata()]


def test_a_step_cut_short_is_not_marked_as_one_that_did_not_hold() -> None:
    assert marked([]) == []


def test_a_step_that_failed_before_it_was_cut_short_is() -> None:
    assert marked(["3 timeouts"]) == [200.0]
