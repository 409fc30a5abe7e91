"""Many one-line paragraphs set in by a few columns, printed as stdout's console prints each one alone.

The report's console prints a left-padded Text as render/text.py's Hanging: the indent, the text wrapped under
itself, a line break. A line that needs no wrapping is those three segments and nothing else, so
`IndentedLines` yields them itself for such lines and a Hanging only for a line that wraps: `inspect` of a
64-worker nginx printed 64 epoll lines, each a renderable of its own that rich wrapped and the console trimmed
and escaped at every level it was nested in (0.7 ms a line)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

from .text import Hanging


class IndentedLines:
    """`lines` (one paragraph each, without line breaks), each set `indent` columns in."""

    def __init__(self, lines: Sequence[str], indent: int) -> None:
        self.lines = list(lines)
        self.indent = indent

    def _whole(self, line: str, options: ConsoleOptions) -> bool:
        """Printed as it is by Hanging: no tab to expand, no space at its end to strip, and it fits the width
        (or nothing is wrapped and nothing cut)."""
        if "\t" in line or "\n" in line or line.endswith(" "):
            return False
        if options.no_wrap and options.overflow == "ignore":
            return True
        return cell_len(line) <= max(options.max_width - self.indent, 1)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        indent = Segment(" " * self.indent)
        for line in self.lines:
            if not line.strip():
                yield Segment.line()  # as hanging() leaves a blank line: a Text of its own
            elif self._whole(line, options):
                yield indent
                yield Segment(line)
                yield Segment.line()
            else:  # as hanging() sets it: in by its own leading spaces too
                own = len(line) - len(line.lstrip(" "))
                yield from Hanging(Text(line[own:]), own + self.indent).__rich_console__(console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        each = [Measurement.get(console, options, Text(line)) for line in self.lines]
        return Measurement(
            max((m.minimum for m in each), default=0) + self.indent,
            max((m.maximum for m in each), default=0) + self.indent,
        )
