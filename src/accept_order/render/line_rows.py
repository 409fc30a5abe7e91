"""A rich Table of one-line rows, printed as rich prints it at a fraction of the cost.

rich measures, pads, wraps and renders every cell on its own (about 0.1 ms a cell here): `inspect` of a
64-worker nginx printed two 64-row tables in 0.14 s, more than it took to read the server. When no cell wraps,
rows of one line each are printed exactly as one row whose cells hold every row's line, one under the other:
the column widths are the same (a multi-line Text measures as its widest line and its longest word), each line
is justified, cropped and padded on its own, and the box draws the same characters between the lines. So a
`LineRowsTable` renders that one row when the whole table fits its width, and is an ordinary Table (rows apart)
otherwise: a column that wraps puts a row's cell on two lines, which the others' lines would not follow.

Only rows that are plain text are joined: a cell with styles, spans, its own justification or a line break of
its own, a row style, a section, a footer or a box whose last row is drawn differently leaves the table as rich
makes it."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

# What str.splitlines breaks at: rich measures a Text's lines by splitlines and renders them by "\n" alone
_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029\t")


class LineRowsTable(Table):
    """A Table whose rows print as one row of many lines when nothing in it wraps (see the module)."""

    def _joined(self, console: Console, column: Column) -> Text | None:
        """The column's cells as one Text, a line each; None when they cannot be joined as they would print.
        Made once per console and column (rich measures every column several times, and fit.py's parts of a
        stacked table are copies that share this cache and the columns' cells)."""
        cache: dict[tuple[int, int], tuple[object, Text | None]] = self.__dict__.setdefault("_joined_cells", {})
        key = (id(console), id(column._cells))
        if key not in cache:
            cache[key] = ((console, column._cells), _join(console, column._cells))  # kept: no id is reused
        return cache[key][1]

    def _one_row(self, console: Console) -> Table | None:
        """This table as one row of joined cells, or None when it cannot be (see the module)."""
        if len(self.rows) < 2 or self.show_footer or self.row_styles or self.leading or self.show_lines:
            return None
        if any(row.style is not None or row.end_section for row in self.rows):
            return None
        box = self.box
        if box is not None and (box.mid_left, box.mid_vertical, box.mid_right) != (
            box.foot_left,
            box.foot_vertical,
            box.foot_right,
        ):
            return None
        columns: list[Column] = []
        for column in self.columns:
            joined = self._joined(console, column)
            if joined is None:
                return None
            columns.append(column.copy())
            columns[-1]._cells = [joined]
        one = Table.__new__(Table)
        one.__dict__.update({k: v for k, v in self.__dict__.items() if k != "_joined_cells"})
        one.columns = columns
        one.rows = self.rows[:1]
        return one

    def _measure_column(self, console: Console, options: ConsoleOptions, column: Column) -> Measurement:
        one = self._one_row(console)
        if one is None:
            return super()._measure_column(console, options, column)
        return one._measure_column(console, options, one.columns[column._index])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        one = self._one_row(console)
        if one is None or not _fits(one, console, options):
            yield from super().__rich_console__(console, options)
        else:
            yield from one.__rich_console__(console, options)


def _join(console: Console, cells: list[RenderableType]) -> Text | None:
    lines: list[str] = []
    for cell in cells:
        text = console.render_str(cell) if isinstance(cell, str) else cell
        if not isinstance(text, Text) or text.spans or text.style or _BREAKS.intersection(text.plain):
            return None
        if text.justify is not None or text.overflow is not None or text.no_wrap is not None or text.end != "\n":
            return None
        lines.append(text.plain)
    return Text("\n".join(lines))


def _fits(table: Table, console: Console, options: ConsoleOptions) -> bool:
    """Every column of `table` gets its widest cell (rich shrinks none, so no cell wraps), as
    Table.__rich_console__ lays it out at this width."""
    if table.expand or table.min_width is not None:
        return False
    width = (table.width if table.width is not None else options.max_width) - table._extra_width
    widths = [table._measure_column(console, options.update_width(width), c).maximum or 1 for c in table.columns]
    return sum(widths) <= width and max(widths) < width  # a column as wide as the room may have been cut to it
