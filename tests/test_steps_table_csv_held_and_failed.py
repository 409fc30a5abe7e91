"""The steps table of ramp, burst and reload as CSV, for a colleague's spreadsheet: a ramp's rows did not say
which step held or why not (its reasons, a list of words, made a column only where it was empty: every step
read as held), and none of the three had a failed column unless some row had failed (an empty errors dict
makes no column). Each row now says its failures, and a ramp's whether it held and why not."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(run_cli(["show", str(path), "--format", "csv"]).stdout)))


def test_a_ramps_rows_say_whether_each_step_held_and_why_not(tmp_path: Path) -> None:
    data = json.loads((GOLDEN / "ramp.json").read_text())
    data["steps"][1].update(reasons=["p99 33.1 ms > 20 ms"], errors={"timeout": 2})
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(data))
    rows = _rows(path)
    assert [(r["held"], r["reasons"], r["failed"]) for r in rows] == [
        ("True", "", "0"),
        ("False", "p99 33.1 ms > 20 ms", "2"),
    ]


def test_every_steps_table_has_a_failed_column_when_none_failed() -> None:
    for name in ("ramp", "burst", "reload"):
        rows = _rows(GOLDEN / f"{name}.json")
        data = json.loads((GOLDEN / f"{name}.json").read_text())
        parts = data.get("steps") or [c for r in data.get("runs", []) for c in r.get("cells", [])] or data["runs"]
        assert [int(r["failed"]) for r in rows] == [sum(p.get("errors", {}).values()) for p in parts], name
