"""render/line_rows.py: a LineRowsTable prints exactly what rich's Table prints (text and styles, at every width,
stacked by fit.py or not), and renders one row of joined cells where it may (fewer cells wrapped)."""

from __future__ import annotations

import random

import pytest
from conftest import counted_calls, printed_like_the_report
from rich import box
from rich.table import Table
from rich.text import Text

from accept_order.render.fit import fitted
from accept_order.render.line_rows import LineRowsTable

WORDS = ["w0", "epoll_wait", "do_epoll_wait", "1 listener", "-", "", "24908", "nginx", "日本語", "a b c d e f g",
         "epoll fd 9: the listener, EPOLLEXCLUSIVE", " lead", "trail ", "x" * 30]  # fmt: skip


def _make(cls: type[Table], rng: random.Random, rows: int) -> Table:
    table = cls(
        title=rng.choice([None, "Who serves"]),
        title_justify="left",
        box=rng.choice([box.SIMPLE_HEAD, box.SIMPLE, box.ROUNDED, None]),
        pad_edge=rng.random() < 0.5,
        collapse_padding=rng.random() < 0.5,
        show_edge=rng.random() < 0.7,
    )
    columns = rng.randint(1, 6)
    for i in range(columns):
        table.add_column(
            f"col{i}" if rng.random() < 0.8 else "a long header",
            justify=rng.choice(["left", "right", "center"]),
            no_wrap=rng.random() < 0.6,
            overflow=rng.choice(["fold", "crop", "ellipsis"]),
            style=rng.choice(["", "", "bold"]),
        )
    for _ in range(rows):
        cells = [rng.choice(WORDS) if rng.random() < 0.8 else Text(rng.choice(WORDS)) for _ in range(columns)]
        table.add_row(*cells)
    return table


def _printed(table: Table, width: int, color: bool, fit: bool) -> str:
    return printed_like_the_report(fitted(table) if fit else table, width, color)


@pytest.mark.parametrize("seed", range(24))
def test_prints_what_rich_prints(seed: int) -> None:
    rng = random.Random(seed)
    rows = rng.choice([1, 2, 3, 17])
    state = rng.getstate()
    ours, theirs = _make(LineRowsTable, rng, rows), None
    rng.setstate(state)
    theirs = _make(Table, rng, rows)
    for width in (8, 30, 80, 160):
        for color in (False, True):
            for fit in (False, True):
                assert _printed(ours, width, color, fit) == _printed(theirs, width, color, fit), (width, color, fit)


@pytest.mark.parametrize(
    "odd", ["two\nlines", "a\rb", "tab\there", "\u2028", Text("styled", style="red"), Text("right", justify="right")]
)
def test_cells_that_do_not_join_print_as_rich_prints_them(odd: object) -> None:
    for column in range(4):
        ours, theirs = _workers(LineRowsTable, 9, odd, column), _workers(Table, 9, odd, column)
        for width in (20, 80, 200):
            assert _printed(ours, width, True, True) == _printed(theirs, width, True, True), (column, width)


def _wraps(table: Table, width: int) -> int:
    """How many Texts rich wraps to print `table` at `width` (one per cell rendered)."""
    with counted_calls(Text, "wrap") as calls:
        _printed(table, width, False, True)
    return calls[0]


def _workers(cls: type[Table], rows: int, odd: object = None, column: int = 0) -> Table:
    table = cls(title="Who serves", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for name in ("pid", "name", "role", "on"):
        table.add_column(name, no_wrap=name != "on", overflow="fold")
    for i in range(rows):
        on = f"epoll fd {7 + 2 * i}: the listener, EPOLLEXCLUSIVE"
        cells: list[object] = [str(30000 + i), Text("nginx"), "worker", on]
        if odd is not None and i == rows // 2:
            cells[column] = odd
        table.add_row(*cells)  # type: ignore[arg-type]
    return table


def test_one_row_is_rendered_where_the_table_fits() -> None:
    """At 120 columns nothing wraps: 4 headers and 4 joined columns, not 4 x 200 cells. At 30 the table is
    stacked (fit.py); in the part where the "on" column wraps, each of its cells and the key's are rendered
    as rich renders them (the rows apart)."""
    assert _wraps(_workers(LineRowsTable, 200), 120) <= 2 * 8 + 2  # the title and the Group's lines
    assert _wraps(_workers(LineRowsTable, 200), 30) >= 2 * 200
    assert _printed(_workers(LineRowsTable, 200), 30, False, True) == _printed(_workers(Table, 200), 30, False, True)
    assert _printed(_workers(LineRowsTable, 200), 120, True, True) == _printed(_workers(Table, 200), 120, True, True)
