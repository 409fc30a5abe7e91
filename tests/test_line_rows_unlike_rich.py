"""render/line_rows.py prints as rich prints where it lays out a table otherwise than rich: a column whose
overflow is "ignore" (rich justifies none of its lines: Text.wrap keeps such a line as it is, the table only pads
it) and cells padded above and below (every row's, not the joined rows' once)."""

from __future__ import annotations

import io

import pytest
from rich import box
from rich.console import Console
from rich.table import Table

from accept_order.render.line_rows import LineRowsTable


def _printed(table: Table, color: bool) -> str:
    out = io.StringIO()
    console = Console(
        file=out, width=80, force_terminal=color, color_system="truecolor" if color else None, highlight=False
    )
    console.print(table)
    return out.getvalue()


def _table(cls: type[Table], justify: str) -> Table:
    table = cls(title="Workers", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("pid")
    table.add_column("name", justify=justify, overflow="ignore")  # type: ignore[arg-type]
    for pid, name in ((4000, "a-much-longer-name"), (4001, "b"), (4002, "mid")):
        table.add_row(str(pid), name)
    return table


@pytest.mark.parametrize("justify", ["right", "center", "left"])
@pytest.mark.parametrize("color", [False, True])
def test_a_column_that_ignores_overflow_prints_as_rich_prints_it(justify: str, color: bool) -> None:
    ours = _printed(_table(LineRowsTable, justify), color)
    assert ours == _printed(_table(Table, justify), color)
    assert "\n 4001  b " in ours  # not moved right: rich justifies no line of this column


@pytest.mark.parametrize("color", [False, True])
def test_cells_padded_above_and_below_print_as_rich_prints_them(color: bool) -> None:
    """padding=(1, 1): rich pads every row's cell with a blank line above and below, not the rows once."""
    tables = []
    for cls in (LineRowsTable, Table):
        table = cls(box=box.ROUNDED, padding=(1, 1))
        table.add_column("pid")
        table.add_column("name")
        for pid, name in ((4000, "w0"), (4001, "w1"), (4002, "w2")):
            table.add_row(str(pid), name)
        tables.append(_printed(table, color))
    assert tables[0] == tables[1]
    body = tables[0].split("┤\n", 1)[1]  # below the header
    assert body.splitlines().count("│      │      │") == 6  # above and below each of the 3 rows
