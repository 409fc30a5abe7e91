"""reload's picture counts connections: with at most 2 lost its axis read 0.0, 0.5, 1.0, 1.5, 2.0, 2.5 connections.
The ticks are whole numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accept_order.experiments.documents import plot_document

GOLDEN = Path(__file__).parent / "data" / "golden" / "reload.json"


def test_the_lost_connections_axis_ticks_whole_numbers() -> None:
    pytest.importorskip("matplotlib")
    data = json.loads(GOLDEN.read_text())
    for run, lost in zip(data["runs"], (0, 2), strict=False):
        run["errors"] = {"ECONNRESET": lost} if lost else {}
    ax = plot_document("reload", data).axes[0]
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
