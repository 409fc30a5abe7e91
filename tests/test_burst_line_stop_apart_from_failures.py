"""Review R6 of a50f73b/e5623cd: a burst cut short by Ctrl-C tells the stop's connections from failures in its
table ('(7 failed) (interrupted, 13 under way)') and picture, but the per-burst line under them still said
'failed aborted 13, timeout 7', the 13 under way at the stop among the failures. It says them apart now; a
burst that ran to its end (a worker that died: the server's) keeps its aborted among the failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "burst.json"


def _line(tmp_path: Path, errors: dict[str, int], interrupted: bool) -> str:
    data: dict[str, Any] = json.loads(GOLDEN.read_text())
    data["runs"][0]["cells"][1].update(served=[10, 20], errors=errors, interrupted=interrupted, clients=50)
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(data))
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0, shown.stderr
    [line] = [line for line in shown.stdout.splitlines() if line.startswith("  epoll, 50:")]
    return line


def test_the_per_burst_line_says_the_stops_connections_apart(tmp_path: Path) -> None:
    line = _line(tmp_path, {"timeout": 7, "aborted": 13}, interrupted=True)
    assert "failed timeout 7;" in line and "13 under way at the stop" in line and "aborted" not in line, line


def test_a_burst_that_ran_to_its_end_keeps_aborted_among_its_failures(tmp_path: Path) -> None:
    line = _line(tmp_path, {"timeout": 7, "aborted": 13}, interrupted=False)
    assert "failed aborted 13, timeout 7;" in line and "under way" not in line, line
