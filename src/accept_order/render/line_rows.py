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
makes it.

Even as one row, rich still wraps, justifies, pads and crops each of its lines as a Text of its own, through every
renderable it is nested in (0.06 ms a line: a 64-worker `inspect` spent 0.05 s in its two big tables). Where every
segment of the rows would be unstyled, `_laid_out` lets rich lay out the title, the header and the borders (a probe
of the table whose joined cells are empty, at the widths the joined cells give) and writes each row's line itself:
a line that fits is justified as rich justifies it (left: padded; right and center: its trailing spaces dropped,
then padded), set in by its cell's padding, the columns parted by the box's divider. The probe's own row, built the
same way from empty cells, must come out as rich drew it, or rich prints the table after all."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.table import Column, Table
from rich.text import Text

from ..core.text import escape_controls

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
        top, _, bottom, _ = self.padding
        if top or bottom:  # each row's cell is padded above and below: one row of joined lines would be once
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
            return
        laid_out = _laid_out(one, console, options)
        yield from one.__rich_console__(console, options) if laid_out is None else laid_out


class _Joined(Text):
    """A column's joined lines, measured once: rich measures each column of a table several times (fit.py's
    stacking, whether it fits, its widths), and a Text's measure, which does not depend on the options, splits
    all its words each time."""

    _measured: Measurement | None = None

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        if self._measured is None:
            self._measured = super().__rich_measure__(console, options)
        return self._measured


def _join(console: Console, cells: list[RenderableType]) -> Text | None:
    lines: list[str] = []
    for cell in cells:
        text = console.render_str(cell) if isinstance(cell, str) else cell
        if not isinstance(text, Text) or text.spans or text.style or _BREAKS.intersection(text.plain):
            return None
        if text.justify is not None or text.overflow is not None or text.no_wrap is not None or text.end != "\n":
            return None
        lines.append(text.plain)
    return _Joined("\n".join(lines))


def _fits(table: Table, console: Console, options: ConsoleOptions) -> bool:
    """Every column of `table` gets its widest cell (rich shrinks none, so no cell wraps), as
    Table.__rich_console__ lays it out at this width."""
    if table.expand or table.min_width is not None:
        return False
    width = (table.width if table.width is not None else options.max_width) - table._extra_width
    widths = [table._measure_column(console, options.update_width(width), c).maximum or 1 for c in table.columns]
    return sum(widths) <= width and max(widths) < width  # a column as wide as the room may have been cut to it


_JUSTIFIED = ("left", "default", "right", "center")  # "full" and a Text's own justification: rich's, as it is


def _laid_out(one: Table, console: Console, options: ConsoleOptions) -> list[Segment] | None:
    """The one-row table `one` as Table.__rich_console__ prints it, its row's lines written here (see the
    module); None where they may not be: a style on them, a control character, a cell of more than one line of
    padding, a justification or a line rich would lay out otherwise."""
    texts = [column._cells[0] for column in one.columns]
    if not all(isinstance(t, Text) for t in texts) or any(c.justify not in _JUSTIFIED for c in one.columns):
        return None
    if any(c.overflow == "ignore" for c in one.columns):
        return None  # rich justifies no line of such a column (Text.wrap keeps it as it is): its own layout
    cells = [t.plain.split("\n") for t in texts if isinstance(t, Text)]
    if not all(_inert(line) for column in cells for line in column):
        return None
    max_width = one.width if one.width is not None else options.max_width
    widths = one._calculate_column_widths(console, options.update_width(max_width - one._extra_width))
    render_options = options.update(width=sum(widths) + one._extra_width, highlight=one.highlight, height=None)
    probed = _probe(one, console, render_options, widths)
    columns = _columns(one, console, widths)
    if probed is None or columns is None:
        return None
    head, drawn, foot = probed
    left, divider, right = _edges(one, console, options)
    if left + divider.join(_justified("", *c) or "" for c in columns) + right != drawn:
        return None  # the probe's row is not what this module would draw: rich draws the table
    lines: list[Segment] = []
    for row in zip(*cells, strict=True):
        laid = [_justified(line, *c) for line, c in zip(row, columns, strict=True)]
        if any(cell is None for cell in laid):
            return None
        lines += [Segment(left + divider.join(cell or "" for cell in laid) + right), Segment.line()]
    title = _annotation(one, console, render_options, one.title, one.title_style, "table.title", one.title_justify)
    caption = _annotation(
        one, console, render_options, one.caption, one.caption_style, "table.caption", one.caption_justify
    )
    return [*title, *head, *lines, *foot, *caption]


def _probe(
    one: Table, console: Console, options: ConsoleOptions, widths: list[int]
) -> tuple[list[Segment], str, list[Segment]] | None:
    """`one` drawn by Table._render at `widths` with its joined cells empty: the segments before its row (edge,
    header, rule), the row's text, the segments after it (the bottom edge). None when that row is styled."""
    probe = Table.__new__(Table)
    probe.__dict__.update(one.__dict__)
    probe.columns = [column.copy() for column in one.columns]
    for column in probe.columns:
        column._cells = [""]
    rendered = list(probe._render(console, options, widths))
    body = [part for part in rendered if isinstance(part, Segment)]
    ends = [i for i, segment in enumerate(body) if segment.text == "\n" and not segment.control]
    if len(body) != len(rendered) or len(ends) != sum(segment.text.count("\n") for segment in body):
        return None  # a renderable, or a line break inside a segment: not lines as Table._render yields them
    row = len(ends) - 1 - (1 if one.box is not None and one.show_edge else 0)  # the line above the bottom edge
    if row < 0:
        return None
    start = ends[row - 1] + 1 if row else 0
    drawn = body[start : ends[row]]
    if any(segment.style or segment.control for segment in drawn):
        return None
    return body[:start], "".join(segment.text for segment in drawn), body[ends[row] + 1 :]


def _columns(one: Table, console: Console, widths: list[int]) -> list[tuple[int, int, int, str]] | None:
    """Each column's (width, left padding, right padding, justification) as Table._render sets its row's cell;
    None for a cell padded above or below (more lines than its text)."""
    columns: list[tuple[int, int, int, str]] = []
    for index, (column, width) in enumerate(zip(one.columns, widths, strict=True)):
        cell = list(one._get_cells(console, index, column))[-1].renderable  # the row's (the header comes first)
        left = right = 0
        if isinstance(cell, Padding):
            if cell.top or cell.bottom or cell.style not in ("none", "", None):
                return None
            left, right = cell.left, cell.right
        if width - left - right <= 0:
            return None
        columns.append((width, left, right, column.justify))
    return columns


def _edges(one: Table, console: Console, options: ConsoleOptions) -> tuple[str, str, str]:
    """The row's left edge, divider and right edge, as Table._render picks them for its last row (the first,
    without a header)."""
    if one.box is None:
        return "", "", ""
    box = one.box.substitute(options, safe=one.safe_box if one.safe_box is not None else console.safe_box)
    if not one.show_header:
        box = box.get_plain_headed_box()
        left, divider, right = box.head_left, box.head_vertical, box.head_right
    else:
        left, divider, right = box.foot_left, box.foot_vertical, box.foot_right
    return (left, divider, right) if one.show_edge else ("", divider, "")


def _inert(line: str) -> bool:
    """Nothing in `line` that the console escapes (which would change its width after it was laid out)."""
    return (line.isascii() and line.isprintable()) or escape_controls(line) == line


def _justified(line: str, width: int, left: int, right: int, justify: str) -> str | None:
    """`line` in its cell, as rich lays out a line that fits (None for one that does not: rich wraps it)."""
    room = width - left - right
    if cell_len(line) > room or len(line) > room:
        return None
    if justify in ("right", "center"):
        line = line.rstrip()
        extra = room - cell_len(line)
        before = extra if justify == "right" else extra // 2
        line = " " * before + line + " " * (extra - before)
    else:
        line += " " * (room - cell_len(line))
    return " " * left + line + " " * right


def _annotation(
    one: Table,
    console: Console,
    options: ConsoleOptions,
    text: object,
    style: object,
    default: str,
    justify: str,
) -> list[Segment]:
    """The title or caption, as Table.__rich_console__ renders it."""
    if not text:
        return []
    picked = Style.pick_first(style, default)  # type: ignore[arg-type]
    shown = console.render_str(text, style=picked, highlight=False) if isinstance(text, str) else text
    return list(console.render(shown, options=options.update(justify=justify)))  # type: ignore[arg-type]
