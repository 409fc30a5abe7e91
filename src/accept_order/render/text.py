"""Text that rich must not touch: fixed-width lines printed exactly as given."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment


class Verbatim:
    """Lines printed exactly as given: never wrapped or re-flowed (mmhistogram output must stay
    byte-comparable with the seed's). Printed with crop=False they are not cut at the console width."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            yield Segment(line)
            yield Segment.line()


def plural(n: int, word: str) -> str:
    """`1 worker`, `3 workers`."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
