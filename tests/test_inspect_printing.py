"""How inspect's report is printed: its tables of one-line rows are laid out line by line by render/line_rows.py
(rich lays out their title, header and borders, and prints them as it always did), byte for byte what rich's
Table prints, on a terminal and off it."""

from __future__ import annotations

import pytest
from conftest import counted_calls, printed_like_the_report
from rich import box
from rich.table import Table
from rich.text import Text

from accept_order.render.fit import fitted
from accept_order.render.line_rows import LineRowsTable


def _printed(table: Table, width: int, color: bool) -> str:
    return printed_like_the_report(fitted(table), width, color)


def _workers(cls: type[Table], rows: int, odd: object = None) -> Table:
    """inspect's "How each worker waits", as experiments/inspect/report.py builds it."""
    table = cls(
        title="How each worker waits", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    for name in ("", "pid", "threads", "sleeps in", "on"):
        table.add_column(name, justify="right" if name == "threads" else "left", no_wrap=name != "on", overflow="fold")
    for i in range(rows):
        cells: list[object] = [f"w{i}", str(4000 + i), "1", "epoll_wait", f"epoll fd {7 + 2 * i}: the listener"]
        if odd is not None and i == rows // 2:
            cells[3] = odd
        table.add_row(*cells)  # type: ignore[arg-type]
    return table


def _lines_laid_out(table: Table, width: int) -> int:
    """How many lines of text rich justified and cut to their width to print `table` at `width` (Text.truncate:
    once for every line of every cell it lays out, as one row of joined cells or not)."""
    with counted_calls(Text, "truncate") as calls:
        _printed(table, width, False)
    return calls[0]


def test_the_rows_of_a_table_that_fits_are_laid_out_without_rich() -> None:
    """500 rows at 120 columns: rich lays out the title, the headers, the Group's two lines and the empty cells
    of the probe, none of the 2,500 lines of the rows (as one row of joined cells, it laid out every one), and
    the text is rich's own, with styles and without."""
    assert _lines_laid_out(_workers(LineRowsTable, 500), 120) <= 3 * (5 + 3)
    for color in (False, True):
        assert _printed(_workers(LineRowsTable, 500), 120, color) == _printed(_workers(Table, 500), 120, color)


@pytest.mark.parametrize("odd", ["tab\x1bhere", "日本語", " lead", "trail ", "", Text("styled", style="red")])
def test_odd_cells_print_as_rich_prints_them(odd: object) -> None:
    """A control character (escaped by the console after the layout), wide characters, spaces at either end,
    an empty cell, a styled one: the same text as rich's Table, at widths that fit, wrap and stack."""
    for width in (30, 80, 200):
        for color in (False, True):
            ours, theirs = _workers(LineRowsTable, 9, odd), _workers(Table, 9, odd)
            assert _printed(ours, width, color) == _printed(theirs, width, color), (width, color)
