"""merge of an observe file said 'obs.json holds a observe result'; now 'an observe' (and 'an inspect', 'an
atlas'), the other kinds as before ('a ramp result')."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).parent / "data"


def test_an_observe_file_is_named_with_its_article(tmp_path: Path) -> None:
    observed = shutil.copy(DATA / "first_hour_4_observe_kept.json", tmp_path / "obs.json")
    latency = shutil.copy(DATA / "golden" / "latency.json", tmp_path / "latency.json")
    line = assert_one_error_line(run_cli(["merge", str(latency), str(observed)]), 1, "obs.json holds an observe result")
    assert "a observe" not in line
