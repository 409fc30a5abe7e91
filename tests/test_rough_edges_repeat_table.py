"""`latency --repeat`'s table never folds a figure: rich narrowed its widest columns below their longest word
("(1533.00-3052.00" over ")" at 110 columns). Each cell is one line where the whole table fits so, else a
median over its range in columns that never wrap, stacked when even that is too wide."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from accept_order.experiments.documents import render_document
from accept_order.render.fit import fitted

GOLDEN = Path(__file__).parent / "data" / "golden" / "repeat-latency.json"
RANGE = re.compile(r"\(\d+(?:\.\d+)?-\d+(?:\.\d+)?\)")


def slow_runs() -> dict[str, Any]:
    """The golden repeat, every duration made 100 and 1000 times longer (per variant), one round twice that:
    figures of 4-7 digits, ranges of up to 17 characters."""
    doc = json.loads(GOLDEN.read_text())
    for k, row in enumerate(doc["rounds"]):
        for j, run in enumerate(row):
            factor = (100, 1000)[j] * (k + 1)
            run["histogram"]["counts"] = [[us * factor, n] for us, n in run["histogram"]["counts"]]
            run["wall_s"] *= factor
    return doc


def printed(doc: dict[str, Any], width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    with console.capture() as capture:
        console.print(fitted(render_document("repeat", doc)), crop=False)
    return capture.get().splitlines()


def table(lines: list[str]) -> list[str]:
    return lines[: lines.index("median (min-max) over the runs")]


def ranges(lines: list[str]) -> list[str]:
    return [found for line in table(lines) for found in RANGE.findall(line)]


@pytest.mark.parametrize("width", range(40, 131, 5))
def test_every_range_is_whole_at_any_width(width: int) -> None:
    doc = slow_runs()
    whole = ranges(printed(doc, 400))
    assert len(whole) == 2 * 5 and "(1533.00-3052.00)" in whole  # two variants, five ranges each
    lines = printed(doc, width)
    assert sorted(ranges(lines)) == sorted(whole), table(lines)
    assert all(line.count("(") == line.count(")") and len(line) <= width for line in table(lines)), table(lines)


def test_a_table_that_fits_on_one_line_per_variant_is_one_line_per_variant() -> None:
    rows = [line for line in table(printed(slow_runs(), 200))[4:] if line.strip()]
    assert [row.split()[0] for row in rows] == ["blocking", "reuseport"]
    assert "2292.50 (1533.00-3052.00)" in rows[1]
