"""`ramp --modes epoll,reuseport` without --repeat is one round, and its report spoke as --repeat does: '200/s
(200-200)', 'no step held in 1/1', a column 'the knee over the runs', 'median (min-max) over the runs', reasons
'in 1/1', 'Verdict: ... in 1/1 runs' and '1 round, the variants interleaved'. One run now says its own figures
and that it is one run; a --repeat of two rounds keeps its wording."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "repeat-ramp.json"
REPEAT_WORDS = re.compile(r"\d+/\d+|\(\d+-\d+\)|over the runs|interleaved|\d+ rounds?\b|in any of")


def _show(tmp_path: Path, rounds: int) -> str:
    data = json.loads(GOLDEN.read_text())
    data["rounds"] = data["rounds"][:rounds]
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(data))
    result = run_cli(["show", str(path)], columns=300)
    assert result.exit_code == 0, result.output
    return result.stdout


def _comparison(out: str) -> list[str]:
    """From the comparison's title on: each mode's own steps table above it is not --repeat's."""
    lines = out.splitlines()
    return lines[lines.index("accept-order ramp --modes") :]


def test_one_run_says_its_own_figures(tmp_path: Path) -> None:
    part = _comparison(_show(tmp_path, rounds=1))
    said = [li for li in part if REPEAT_WORDS.search(li.split("load average")[0]) and not li.startswith("Warning")]
    assert not said, said
    row = next(line for line in part if line.startswith(" epoll") or line.startswith("epoll "))
    assert row.split()[1:] == ["200/s", "2000/s"], row
    assert "  epoll, did not hold: finished 872/s of 2000/s offered" in part, part
    verdict = next(line for line in part if line.startswith("Verdict"))
    assert verdict.endswith("in this one run (--repeat N tells how often)"), verdict
    assert any(line.startswith("one run of each, one after another;") for line in part), part


def test_repeat_keeps_its_wording(tmp_path: Path) -> None:
    out = _show(tmp_path, rounds=2)
    assert "200/s (200-200)" in out and "in 2/2 runs" in out and "median (min-max) over the runs" in out
    assert "2 rounds, the variants interleaved" in out


def test_one_run_cut_short_names_no_mode(tmp_path: Path) -> None:
    data = json.loads(GOLDEN.read_text())
    data["rounds"] = data["rounds"][:1]
    data["rounds"][0][0]["interrupted"] = True
    data["rounds"][0][0]["steps"] = data["rounds"][0][0]["steps"][:1]
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(data))
    out = run_cli(["show", str(path)], columns=300).stdout
    verdict = next(line for line in out.splitlines() if line.startswith("Verdict"))
    assert verdict == "Verdict: none: interrupted before every mode's breaking point was known", verdict
