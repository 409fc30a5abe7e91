"""One ramp's steps table (show --format csv) gave each worker's served count ('1153 847') and the step's wall time
but not the rate its table leads with (got/s), which `ramp --modes`' rows give as got_per_s: the figure the knee is
read by was left to the reader's sum of a space-joined list. Each step's row now has it, as the table rounds it."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def test_each_step_says_the_rate_its_table_says() -> None:
    path = str(GOLDEN / "ramp.json")
    rows = list(csv.DictReader(io.StringIO(run_cli(["show", path, "--format", "csv"]).stdout)))
    table = run_cli(["show", path]).stdout
    said = [int(m.group(1)) for m in re.finditer(r"^\s+\d+/s\s+(\d+)\s", table, re.MULTILINE)]
    assert [float(r["got_per_s"]) for r in rows] == [53.0, 98.8]
    assert [round(float(r["got_per_s"])) for r in rows] == said == [53, 99]
    served = [sum(map(int, r["served"].split())) / float(r["wall_s"]) for r in rows]
    assert [round(s, 1) for s in served] == [53.0, 98.8]
