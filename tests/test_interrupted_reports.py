"""A compare or herd stopped by Ctrl-C says so: the row it cut short is the connections until then (since
0.3 an interrupted mode's run is kept, not dropped), and the variants it never reached are not in the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def shown(tmp_path: Path, kind: str, interrupted: bool, cut: int | None) -> str:
    doc = json.loads((GOLDEN / f"{kind}.json").read_text())
    if interrupted:
        doc["interrupted"] = True
    if cut is not None:
        doc["runs"][cut]["interrupted"] = True
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize(
    ("kind", "cut", "line"),
    [
        ("compare", 2, "the reuseport row is the connections until then, and no later variant ran."),
        ("compare", None, "the rows are the runs that finished, and no later variant ran."),
        ("herd", 1, "the epoll row is the connections until then, and no later variant ran."),
    ],
)
def test_an_interrupted_run_of_several_says_which_row_is_partial(
    tmp_path: Path, kind: str, cut: int | None, line: str
) -> None:
    assert f"Stopped early: interrupted; {line}" in shown(tmp_path, kind, True, cut).splitlines()


@pytest.mark.parametrize("kind", ["compare", "herd"])
def test_a_finished_one_says_nothing_of_it(tmp_path: Path, kind: str) -> None:
    assert "Stopped early" not in shown(tmp_path, kind, False, None)


def ramp_shown(tmp_path: Path, reasons: list[str]) -> str:
    """The golden ramp (50/s and 100/s held) with a third step at 200/s that Ctrl-C cut short."""
    doc = json.loads((GOLDEN / "ramp.json").read_text())
    cut = dict(doc["steps"][-1], offered=200.0, interrupted=True, reasons=reasons)
    doc["steps"].append(cut)
    doc["interrupted"] = True
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_ramp_step_cut_short_is_not_its_knee(tmp_path: Path) -> None:
    """0.3 named the interrupted step as the first that did not hold ("... was 200/s: interrupted")."""
    text = ramp_shown(tmp_path, [])
    assert "Interrupted at 200/s before that step could tell: every step that finished held, up to 100/s." in text
    assert "Knee" not in text and "breaking point" not in text


def test_a_ramp_step_cut_short_after_it_failed_is_the_knee(tmp_path: Path) -> None:
    """What it showed before the signal (timeouts, an overflowing queue) is a reason: that step did not hold."""
    text = ramp_shown(tmp_path, ["3 timeouts"])
    assert "Knee: the last step that held was 100/s; the first that did not was 200/s: 3 timeouts." in text
