"""mmhistogram's block (summary line, header, bucket rows) set to the width it is printed at."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult

from ..core.histogram import COLUMNS, LatencyHistogram, bar_columns, histogram_lines, summary_line
from .text import Verbatim


class Mmhistogram:
    """A latency histogram as mmhistogram prints it. Off a terminal (no_wrap: a pipe, a file) the bar is its 50
    columns, byte for byte the seed's; on a terminal narrower than a row the bar narrows (mmhistogram's own
    ``-c``) so each bucket stays one line with its count whole, instead of folding every row in two."""

    def __init__(self, title: str, hist: LatencyHistogram) -> None:
        self.title = title
        self.hist = hist

    def lines(self, line_width: int | None = None) -> list[str]:
        """The block's lines, the bar fitted to `line_width` (None: mmhistogram's 50 columns)."""
        columns = COLUMNS if line_width is None else bar_columns(self.hist, line_width)
        return [summary_line(self.title, self.hist), *histogram_lines(self.title, self.hist, columns)]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Verbatim(self.lines(None if options.no_wrap else options.max_width))
