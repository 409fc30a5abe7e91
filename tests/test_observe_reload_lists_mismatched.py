"""A saved observe file whose reload lists do not pair up is refused: one line naming the field, exit 1 (review).
`reloaded.starts` and `reloaded.accepts` hold one value per pid of `reloaded.pids` (or none: a file from before them),
and `reloaded.left` names some of those pids; a file with two pids and one start was shown without complaint, its
notes pairing pid 102 with no start, or a pid with another's count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "observe.json"
RELOAD: dict[str, Any] = {"pids": [101, 102], "after_s": 1.0, "takes_over": True, "starts": [1.0, 2.0]}
RELOAD |= {"accepts": [3, 4], "left": [101]}


def shown(tmp_path: Path, **changed: Any) -> Any:
    doc = json.loads(GOLDEN.read_text())
    doc["reloaded"] = RELOAD | changed
    path = tmp_path / "observe.json"
    path.write_text(json.dumps(doc))
    return run_cli(["show", str(path)], columns=3000)


def test_matching_lists_are_shown(tmp_path: Path) -> None:
    done = shown(tmp_path)
    assert done.exit_code == 0, done.output
    assert shown(tmp_path, starts=[], accepts=[]).exit_code == 0  # a file from before the lists: none, as before


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"starts": [1.0]}, "reloaded.starts: has 1 values, not one per pid of reloaded.pids (2)"),
        ({"accepts": [3, 4, 5]}, "reloaded.accepts: has 3 values, not one per pid of reloaded.pids (2)"),
        ({"left": [103]}, "reloaded.left: names pid 103, not among reloaded.pids"),
    ],
    ids=["starts", "accepts", "left"],
)
def test_mismatched_lists_are_one_line_exit_1(tmp_path: Path, changed: dict[str, Any], said: str) -> None:
    done = shown(tmp_path, **changed)
    assert done.exit_code == 1, done.output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], done.stderr
    assert "Traceback" not in done.output
