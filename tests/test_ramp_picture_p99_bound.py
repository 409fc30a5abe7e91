"""The ramp picture for colleagues: 'ramp --server haproxy --maxconn 4 --concurrency-steps 4,64,512 --p99 50ms'
drew crosses where steps did not hold, with nothing saying by what (no p99 bound on the p99 axis, no bound, step
length or maxconn in the footer: '2 workers, work 1 ms; Linux ...'). The bound is drawn and the footer says
how a step was judged and HAProxy's maxconn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accept_order.experiments.documents import plot_document

GOLDEN = Path(__file__).parent / "data" / "golden" / "ramp.json"


@pytest.fixture(scope="module", autouse=True)
def _matplotlib() -> None:
    pytest.importorskip("matplotlib")


def _figure_text(changes: dict[str, object], server: dict[str, object] | None = None) -> tuple[str, list[float]]:
    data = json.loads(GOLDEN.read_text())
    data["plan"].update(changes)
    data["server"].update(server or {})
    figure = plot_document("ramp", data)
    footer = figure._supxlabel.get_text()  # the settings line (render/plots.titled)
    p99_axis = figure.axes[1]
    bounds = [line.get_ydata()[0] for line in p99_axis.get_lines() if line.get_linestyle() == ":"]
    return " ".join(footer.split()), bounds


def test_the_p99_bound_is_drawn_and_the_footer_says_how_a_step_held() -> None:
    footer, bounds = _figure_text({"p99_ms": 50.0, "concurrencies": [4, 64], "rates": []}, {"maxconn": 4})
    assert bounds == [50.0]
    assert "maxconn 4" in footer and "0.3 s per step" in footer, footer
    assert "a step held with p99 ≤ 50 ms and no failure" in footer, footer


def test_without_a_bound_no_line_and_the_failures_rule_alone() -> None:
    footer, bounds = _figure_text({"max_errors": 3})
    assert bounds == [] and "a step held with at most 3 failures" in footer and "maxconn" not in footer, footer
