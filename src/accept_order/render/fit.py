"""Tables that fit the terminal's width without losing a column or cutting a cell.

Rich fits a table that is too wide by shrinking its columns until cells are cut with "…" or whole
columns vanish (a verdict at 80 columns). A report must never lose its key column or its verdict, so a
table whose columns cannot all be shown whole at the width is stacked instead: the same rows in two or
more tables, each repeating the key columns (the mode, what identifies a row), with the columns that fit
beside them, in their order. A table that fits is printed as it was built, so wide terminals and pipes
(120 columns) see what they always saw."""

from __future__ import annotations

import copy
import dataclasses
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement

if TYPE_CHECKING:  # rich.table is imported by the reports that make a Table: run's makes none (simple_table.py)
    from rich.table import Column, Table

# A wrapped cell narrower than this reads one word per line; a column that may wrap is given up to this
# much (never more than its widest cell) before the table is stacked.
READABLE = 16

_KEYS: WeakKeyDictionary[Table, int] = WeakKeyDictionary()


def key_columns(table: Table, count: int) -> Table:
    """Mark the first `count` columns of `table` as what identifies a row: each stacked part repeats them.
    A table not marked repeats its first column."""
    _KEYS[table] = count
    return table


def _needed(table: Table, console: Console, options: ConsoleOptions) -> int:
    """The width `table` needs to show every cell whole: a column that does not wrap, its widest cell; one
    that wraps, its longest word (at least READABLE, or its widest cell if narrower)."""
    total = table._extra_width
    for column in table.columns:
        low, high = table._measure_column(console, options, column)  # with its padding
        total += high if column.no_wrap else min(high, max(low, READABLE))
    return total


def _part(table: Table, columns: list[Column], first: bool, last: bool) -> Table:
    part = copy.copy(table)
    part.columns = [dataclasses.replace(column, _index=i) for i, column in enumerate(columns)]
    part.title = table.title if first else None
    part.caption = table.caption if last else None
    return part


def stack(table: Table, console: Console, options: ConsoleOptions) -> list[Table]:
    """`table` as it is when it fits `options.max_width`, else as parts that each fit (when any can: key
    columns wider than the terminal are shown whole anyway)."""
    if _needed(table, console, options) <= options.max_width:
        return [table]
    keys = min(_KEYS.get(table, 1), len(table.columns))
    head, rest = table.columns[:keys], table.columns[keys:]
    groups: list[list[Column]] = []
    group: list[Column] = []
    for column in rest:
        trial = _part(table, [*head, *group, column], False, False)
        if group and _needed(trial, console, options) > options.max_width:
            groups.append(group)
            group = []
        group.append(column)
    groups.append(group)
    parts = [_part(table, [*head, *g], i == 0, i == len(groups) - 1) for i, g in enumerate(groups)]
    return [_folded(part) if _needed(part, console, options) > options.max_width else part for part in parts]


def _folded(part: Table) -> Table:
    """A part that does not fit even with one column beside the keys: its cells fold where rich would cut them
    with "…" ('ECONNRE…' for ECONNRESET in reload's failed column at 40 columns), so no figure or name is lost; a
    column's least width is let go (kept connections' per-worker figures, held on one line where they fit: 4 nginx
    workers' p99s beside the mode took 44 of 40 columns), so its cells wrap between words instead."""
    part.columns = [dataclasses.replace(column, overflow="fold", min_width=None) for column in part.columns]
    return part


class Fitted:
    """A table that is stacked, when it is too wide, at the width it is printed at."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # Parts follow one another as they are: a box's blank edges already part them (a spacer made three
        # blank lines between parts).
        yield from stack(self.table, console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)


def _fitted(renderables: list[RenderableType]) -> Iterator[RenderableType]:
    for item in renderables:
        yield fitted(item)


def fitted(renderable: RenderableType) -> RenderableType:
    """`renderable` with every table in it (at the top, or in a Group) made to fit the width it is printed
    at; anything else as it is."""
    table = sys.modules.get("rich.table")  # not imported yet: no Table was made
    if table is not None and isinstance(renderable, table.Table):
        return Fitted(renderable)
    if isinstance(renderable, Group):
        return Group(*_fitted(list(renderable.renderables)), fit=renderable.fit)
    return renderable
