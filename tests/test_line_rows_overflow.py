"""render/line_rows.py prints a column whose overflow is "ignore" as rich does: rich justifies none of its lines
(Text.wrap keeps such a line as it is, the table only pads it), so a right or centred column stays at the left."""

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
