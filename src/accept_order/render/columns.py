"""Fixed-width text tables (the seeds' own layouts, printed as text rather than by rich) that fit the
width they are printed at: when every column fits beside the key column, the lines are exactly the
layout's; when not, the columns are stacked in parts that each fit, every part repeating the key column,
so no figure is cut or wrapped into another column's place."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment


@dataclass(frozen=True)
class TextColumn:
    """One column as printed: its header and one cell per row, each already padded and with its
    separator (`"|  lat-avg "`), so that columns put side by side make the layout's lines."""

    header: str
    cells: tuple[str, ...]

    @property
    def width(self) -> int:
        return max([len(self.header), *(len(c) for c in self.cells)])


def dashes(header: str) -> str:
    return "-" * len(header)


@dataclass(frozen=True)
class TextTable:
    """`key` then `columns`, a rule under the header (`rule(header)`), and after every row too when
    `rule_each_row` (seed 001's table)."""

    key: TextColumn
    columns: Sequence[TextColumn]
    rule: Callable[[str], str] = dashes
    rule_each_row: bool = False

    def parts(self, width: int) -> list[list[TextColumn]]:
        """The columns in order, in as few parts as fit `width` beside the key (one each at the least),
        as even as that many parts can be (not one full part and a last one of a single column)."""
        room = width - self.key.width
        fewest = len(self._greedy(room))
        even = min(
            (w for w in range(max((c.width for c in self.columns), default=0), room) if len(self._greedy(w)) == fewest),
            default=room,
        )
        return self._greedy(even)

    def _greedy(self, room: int) -> list[list[TextColumn]]:
        parts: list[list[TextColumn]] = [[]]
        used = 0
        for column in self.columns:
            if parts[-1] and used + column.width > room:
                parts.append([])
                used = 0
            parts[-1].append(column)
            used += column.width
        return parts

    def lines(self, width: int) -> list[str]:
        out: list[str] = []
        for n, part in enumerate(self.parts(width)):
            if n:
                out.append("")
            header = (self.key.header + "".join(c.header for c in part)).rstrip()
            out += [header, self.rule(header)]
            for i, key in enumerate(self.key.cells):
                out.append((key + "".join(c.cells[i] for c in part)).rstrip())
                if self.rule_each_row:
                    out.append(self.rule(header))
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines(options.max_width):
            yield Segment(line)
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max(len(line) for line in self.lines(options.max_width))
        return Measurement(widest, widest)
