"""Each command that says the server's listeners' drops reads them in its run: ramp's steps, burst's cells and latency's
evidence keep `listener_drops` for a server on this host. The words' tests (test_ramp_listener_drops.py,
test_burst_listener_drops.py, test_latency_listener_drops.py) set the field by hand, so a run that never read it
(the reading or its hand-over to the result undone) would pass them and say nothing of whose overflows they were.
A server that dropped nothing reads 0 here, whatever other listeners of the namespace did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli


def _ran(tmp_path: Path, args: list[str]) -> dict[str, Any]:
    path = tmp_path / "result.json"
    result = run_cli([*args, "-w", "1", "--json", str(path)])
    assert result.exit_code == 0, result.output
    return dict(json.loads(path.read_text()))


def test_a_ramp_step_keeps_them(tmp_path: Path) -> None:
    steps = _ran(tmp_path, ["ramp", "--rates", "20", "--step", "300ms"])["steps"]
    assert [isinstance(s.get("listener_drops"), int) for s in steps] == [True], steps


def test_a_burst_cell_keeps_them(tmp_path: Path) -> None:
    cells = [c for run in _ran(tmp_path, ["burst", "--clients", "5"])["runs"] for c in run["cells"]]
    assert [isinstance(c.get("listener_drops"), int) for c in cells] == [True], cells


def test_a_latency_run_keeps_them(tmp_path: Path) -> None:
    doc = _ran(tmp_path, ["latency", "-n", "20", "-c", "2"])
    runs = doc.get("runs") or [doc]
    assert [isinstance(r["evidence"].get("listener_drops"), int) for r in runs] == [True], runs[0]["evidence"]
