"""One ramp's knee said where the load broke and not how sure that is: 'ramp --rates 2000,8000 --step 1s' read 'Knee:
the last step that held was 2000/s; the first that did not was 8000/s: ...', one run on a busy machine, whose knee
lies anywhere between the two steps. The line now says so, and that --repeat counts how often it does; so does a ramp
whose every step held."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def _said(tmp_path: Path, reasons: list[list[str]]) -> str:
    data: dict[str, Any] = json.loads(GOLDEN.joinpath("ramp.json").read_text())  # 50/s and 100/s, both held
    for step, why in zip(data["steps"], reasons, strict=True):
        step["reasons"] = why
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(data))
    result = run_cli(["show", str(path)], columns=2000)
    assert result.exit_code == 0, result.output
    return next(line for line in result.stdout.splitlines() if line.startswith(("Knee", "Every step")))


def test_the_knee_says_it_lies_between_two_steps_of_one_run(tmp_path: Path) -> None:
    line = _said(tmp_path, [[], ["p99 12.0 ms over the 10 ms bound"]])
    assert line.endswith(
        "How sure: one run, to the steps' spacing: it lies between 50/s and 100/s; --repeat 3 says how often it does"
    ), line


def test_no_step_held_bounds_it_from_above(tmp_path: Path) -> None:
    line = _said(tmp_path, [["p99 40.0 ms over the 10 ms bound"], ["p99 12.0 ms over the 10 ms bound"]])
    assert line.startswith("Knee: no step held; the first that did not was 50/s")
    assert line.endswith("it lies at or below 50/s; --repeat 3 says how often it does"), line


def test_every_step_held_is_one_run_too(tmp_path: Path) -> None:
    line = _said(tmp_path, [[], []])
    assert line == (
        "Every step held, up to 100/s: the breaking point is further out. How sure: one run; --repeat 3 says how "
        "often every step holds"
    ), line
