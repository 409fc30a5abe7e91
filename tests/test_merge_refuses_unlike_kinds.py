"""merge of a latency file and a ramp file said "ramp.json holds a ramp result, latency.json a latency one: not the
same experiment", as if two ramp files would add; with the ramp first it said what merge adds. Either order says
it now."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import assert_one_error_line, run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def test_a_kind_merge_does_not_add_is_said_so_in_any_place(tmp_path: Path) -> None:
    for name in ("latency", "ramp"):
        shutil.copy(GOLDEN / f"{name}.json", tmp_path / f"{name}.json")
    lat, ramp = str(tmp_path / "latency.json"), str(tmp_path / "ramp.json")
    for order in ([lat, ramp], [ramp, lat]):
        line = assert_one_error_line(run_cli(["merge", *order]), 1, "ramp.json holds a ramp result")
        assert "merge adds latency results" in line and "not the same experiment" not in line, line
