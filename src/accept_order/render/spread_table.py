"""A table of figures given as `median (min-max)`, laid out so no figure is ever folded.

Rich fits a table that is too wide by narrowing its widest wrapping columns to the width of the next widest,
with no regard for their longest word: a `latency --repeat` table at 100 columns printed "(1533.00-3052.00" over
")". render/fit.py stacks a table only when its words cannot all be shown whole, so it could not see this. Here
the choice is made before rich's: each cell on one line where the whole table fits so, else each median over
its range on a line of its own in columns that never wrap, stacked (fit.py) when even that is too wide."""

from __future__ import annotations

import copy
import dataclasses

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table

from .fit import Fitted

_ENDLESS = 1 << 20


def _no_wrap(table: Table, split: bool) -> Table:
    """`table` with columns that never wrap; with `split`, each `median (range)` cell on two lines."""
    laid = copy.copy(table)
    laid.columns = [
        dataclasses.replace(
            column,
            no_wrap=True,
            _cells=[_split(cell) if split and i else cell for cell in column._cells],
        )
        for i, column in enumerate(table.columns)
    ]
    return laid


def _split(cell: RenderableType) -> RenderableType:
    return cell.replace(" (", "\n(", 1) if isinstance(cell, str) else cell


class SpreadTable:
    """`table` (built with one line per cell, its first column the key) laid out as the module says."""

    def __init__(self, table: Table) -> None:
        self.one_line = _no_wrap(table, split=False)
        self.two_lines = _no_wrap(table, split=True)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # Measured as if the line were endless: a measure is capped at the width it is given.
        whole = Measurement.get(console, options.update_width(_ENDLESS), self.one_line).maximum
        if whole <= options.max_width:
            yield self.one_line
        else:
            yield Fitted(self.two_lines)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.two_lines)
