"""show --format csv --table of a table another kind has: 'show observe.json --format csv --table summary' said
"no table 'summary'; choose one of records, histogram, workers, steps, rounds, intervals, hosts", a list of
tables the observe result mostly lacks (and that omits latency's summary, which exists). It now names the
result's kind and the tables it has, as for the other names."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import assert_one_error_line, run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def test_another_kinds_table_names_this_kinds(tmp_path: Path) -> None:
    observe = tmp_path / "observe.json"
    observe.write_text((GOLDEN / "observe.json").read_text())
    line = assert_one_error_line(run_cli(["show", str(observe), "--format", "csv", "--table", "summary"]), 2)
    assert "an observe result has no table 'summary' (try --table intervals or workers)" in line, line
    latency = tmp_path / "latency.json"
    latency.write_text((GOLDEN / "latency-compare.json").read_text())
    line = assert_one_error_line(run_cli(["show", str(latency), "--format", "csv", "--table", "waits"]), 2)
    assert "a latency-compare result has no table 'waits' (try --table histogram, workers, summary" in line, line
    assert json.loads(latency.read_text())  # untouched
