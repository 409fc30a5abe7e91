"""burst cut short by Ctrl-C: 'burst --modes epoll,reuseport -w 4 --clients 1000,3000' stopped 1.2 s in showed
'0.25 s (1000 failed) (interrupted)' and 'time from the first connect to the last reply or failure (some
failed)': the 1000 connections under way at the stop (aborted, the load's rule) read as the server's failures.
ramp and reload already tell the stop's from the server's; the burst table does now."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "burst.json"


def _shown(tmp_path: Path, errors: dict[str, int], interrupted: bool) -> str:
    data: dict[str, Any] = json.loads(GOLDEN.read_text())
    data["runs"] = data["runs"][:1]
    cell = data["runs"][0]["cells"][0]
    data["runs"][0]["cells"] = [cell]
    cell.update(served=[0, 0], errors=errors, interrupted=interrupted, clients=sum(errors.values()))
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(data))
    return run_cli(["show", str(path)]).stdout


def test_connections_under_way_at_the_stop_are_not_failures(tmp_path: Path) -> None:
    out = _shown(tmp_path, {"aborted": 1000}, interrupted=True)
    assert "failed)" not in out and "(interrupted, 1000 under way)" in out
    assert "some failed" not in out and "or the stop" in out


def test_failures_before_the_stop_still_show(tmp_path: Path) -> None:
    out = _shown(tmp_path, {"timeout": 5, "aborted": 3}, interrupted=True)
    assert "(5 failed)" in out and "(interrupted, 3 under way)" in out and "some failed" in out


def test_a_burst_that_ran_to_its_end_counts_aborted_as_failed(tmp_path: Path) -> None:
    out = _shown(tmp_path, {"aborted": 3}, interrupted=False)  # a worker that died mid-burst: the server's
    assert "(3 failed)" in out and "interrupted" not in out


def test_nor_in_the_picture(tmp_path: Path) -> None:
    """The picture of that burst crossed the point and noted '1000 failed'; it notes the stop."""
    pytest.importorskip("matplotlib")
    from accept_order.experiments.documents import plot_document

    _shown(tmp_path, {"aborted": 1000}, interrupted=True)
    figure = plot_document("burst", json.loads((tmp_path / "burst.json").read_text()))
    ax = figure.axes[0]
    notes = " ".join(t.get_text() for t in ax.texts)
    assert "failed" not in notes and "interrupted" in notes, notes
    assert "or the stop" in ax.get_ylabel() and "failure" not in ax.get_ylabel(), ax.get_ylabel()
