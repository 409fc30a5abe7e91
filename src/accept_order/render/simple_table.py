"""The reports' plain tables (the per-worker table, ss's listeners) printed as rich prints them, without rich's Table.

The per-worker table (run's, serve's, herd's and latency's reports) is a small table of one-line cells in one
style, as ss's listener table is: rich's SIMPLE_HEAD box, no padding at the edges, collapsed padding between
columns, a header, each column justified left or right. rich lays out such a table by measuring, padding, wrapping
and cropping each cell as a renderable of its own: in `run --mode epoll`, 25 M of its 444 M instructions
(callgrind) for a 4-line table, and rich.table's import (with fractions and decimal) 21 M more (issue 30). When
the table fits the width it is printed at, no cell wraps and each column is as wide as its widest cell: a
`SimpleTable` then writes the lines itself, segment for segment as rich's Table would (the same text, and the same
styles on a terminal: the header's, the title's). Where it would not (too wide, a cell with a control character, a
line break or a space at an end, a title wider than the table, an ASCII-only or legacy Windows console, a console
other than the report's), it is rich's Table after all, fitted (render/fit.py) as before, built when first needed.
tests/test_simple_table.py compares the two, byte for byte, at several widths, piped, on a terminal and on an
ASCII stdout."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Literal

from rich import box
from rich.cells import cell_len, get_character_cell_size
from rich.segment import Segment

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.measure import Measurement
    from rich.style import Style
    from rich.table import Table

Justify = Literal["left", "right"]


def _plain(text: str) -> bool:
    """`text` is one printable line, no space at an end, every character a cell or two wide: rich lays out a
    zero-width one (a combining accent, U+FE0F, U+1160) otherwise than its cell_len, dropping or moving it."""
    if not text.isprintable() or text.strip(" ") != text:
        return False
    return text.isascii() or all(get_character_cell_size(char) for char in text)


class SimpleTable:
    """Columns of (header, justification), rows of one-line strings, an optional title (left-justified)."""

    def __init__(self, columns: Sequence[tuple[str, Justify]], title: str | None = None) -> None:
        self.columns = list(columns)
        self.rows: list[list[str]] = []
        self.title = title
        self._table: Table | None = None

    def add_row(self, *cells: str) -> None:
        self.rows.append(list(cells))

    def table(self) -> Table:
        """This table as rich's Table (made once): what prints where the lines cannot be written directly."""
        if self._table is None:
            from rich.table import Table

            table = Table(
                title=self.title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
            )
            for name, justify in self.columns:
                table.add_column(name, justify=justify)
            for row in self.rows:
                table.add_row(*row)
            self._table = table
        return self._table

    def _widths(self) -> list[int] | None:
        """Each column's width with its padding as rich measures it (its widest cell, one space to the right of
        every column but the last), or None when a cell is not one printable line without spaces at its ends."""
        widths = []
        last = len(self.columns) - 1
        for index, (header, _) in enumerate(self.columns):
            cells = [header, *(row[index] for row in self.rows)]
            # a tab, a line break, a control character; spaces at an end (rich's wrapping drops those at the end)
            if not all(_plain(cell) for cell in cells):
                return None
            widths.append(max(cell_len(cell) for cell in cells) + (index < last))
        return widths

    def _lines(self, console: Console, options: ConsoleOptions) -> Iterator[Segment] | None:
        """The table's segments as rich's Table renders them, or None where they may differ (see the module)."""
        if not self.columns or any(len(row) != len(self.columns) for row in self.rows):
            return None
        if options.legacy_windows or options.ascii_only:  # rich substitutes another box
            return None
        # The report's console (cli/consoles.py ReportConsole) drops the spaces at the end of every line rich
        # renders, at every level, a cell's too: its text and its padding then come apart as written here. Any
        # other console keeps them, and a styled cell's spaces go with its text: rich's Table prints there.
        if not getattr(console, "trims_lines", False):
            return None
        widths = self._widths()
        if widths is None:
            return None
        table_width = sum(widths) + len(widths) + 1  # the edges and a divider between columns
        if table_width > options.max_width:  # rich would shrink or wrap a column: fit.py stacks it
            return None
        title = self.title
        if title is not None and (not _plain(title) or cell_len(title) > table_width):
            return None  # rich wraps a title wider than the table, and a control character is escaped after
        return self._segments(console, widths, table_width)

    def _segments(self, console: Console, widths: list[int], table_width: int) -> Iterator[Segment]:
        plain, line = box.SIMPLE_HEAD, Segment.line()
        if self.title:
            yield Segment(self.title + " " * (table_width - cell_len(self.title)), console.get_style("table.title"))
            yield line
        yield Segment(plain.get_top(widths))
        yield line
        names = [name for name, _ in self.columns]
        yield from self._row(names, widths, console.get_style("table.header"), plain.head_left, plain.head_vertical)
        yield Segment(plain.head_right)
        yield line
        yield Segment(plain.get_row(widths, "head", edge=True))
        yield line
        for index, row in enumerate(self.rows):
            # rich draws the last row with the foot's edges, the others with the mid's (the same spaces here)
            last = index == len(self.rows) - 1
            left, divider, right = (
                (plain.foot_left, plain.foot_vertical, plain.foot_right)
                if last
                else (plain.mid_left, plain.mid_vertical, plain.mid_right)
            )
            yield from self._row(row, widths, None, left, divider)
            yield Segment(right)
            yield line
        yield Segment(plain.get_bottom(widths))
        yield line

    def _row(
        self, cells: list[str], widths: list[int], style: Style | None, left: str, divider: str
    ) -> Iterator[Segment]:
        """One line's cells as rich renders each: its justified text, then its right padding, both in the cell's
        style (the header's: bold on a terminal), each a segment of its own; the edge and the dividers unstyled."""
        yield Segment(left)
        last = len(cells) - 1
        for index, (cell, width, (_, justify)) in enumerate(zip(cells, widths, self.columns, strict=True)):
            pad = int(index < last)
            room = width - pad - cell_len(cell)
            if justify == "right":
                yield Segment(" " * room + cell, style)
                room = 0
            else:  # rich pads the line to the column's width, then adds the padding: one run of spaces
                yield Segment(cell, style)
            if room + pad:
                yield Segment(" " * (room + pad), style)
            if index < last:
                yield Segment(divider)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = self._lines(console, options)
        if lines is not None:
            yield from lines
            return
        from .fit import Fitted

        yield Fitted(self.table())

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        return Measurement.get(console, options, self.table())
