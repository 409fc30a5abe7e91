"""A sweep's CSV tables and HdrHistogram text name each run by its cap, as its report does: a real 'sweep -w 2 -n
3000 -c 32 --work 200us' exported 8,646 histogram rows all under 'epoll' (the summary, workers and model tables
too, and '# epoll' above each of the four --format hdr histograms), so a spreadsheet summing by run added the four
caps' latencies into one. sweep --repeat's tables were already named by cap."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "sweep.json"  # caps 1 and 0, builtin epoll


@pytest.mark.parametrize("table", ["histogram", "summary", "workers", "model"])
def test_each_table_names_its_runs_by_cap(table: str) -> None:
    result = run_cli(["show", str(GOLDEN), "--format", "csv", "--table", table])
    assert result.exit_code == 0, result.output
    names = [row["run"] for row in csv.DictReader(io.StringIO(result.stdout))]
    assert names and set(names) == {"1 limit", "no limit"}, sorted(set(names))
    assert names.index("no limit") > names.index("1 limit")  # the order they ran in


def test_hdr_names_each_histogram_by_cap() -> None:
    result = run_cli(["show", str(GOLDEN), "--format", "hdr"])
    assert result.exit_code == 0, result.output
    assert [line for line in result.stdout.splitlines() if line.startswith("# ")] == ["# 1 limit", "# no limit"]


def test_a_latency_compare_keeps_its_mode_names() -> None:
    compare = GOLDEN.parent / "latency-compare.json"
    result = run_cli(["show", str(compare), "--format", "csv", "--table", "summary"])
    names = [row["run"] for row in csv.DictReader(io.StringIO(result.stdout))]
    assert names and not any("limit" in n for n in names), names
