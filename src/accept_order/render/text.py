"""Text for the terminal: strings from files and arguments with their control characters escaped, and
fixed-width lines that rich must not touch."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment


class Verbatim:
    """Lines printed exactly as given: never re-flowed (mmhistogram output must stay byte-comparable with
    the seed's). Printed with crop=False they are not cut at the console width; a line wider than the
    terminal is broken at its last space that fits, and goes on indented, rather than spilling over."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            for piece in fold(line, options.max_width):
                yield Segment(piece)
                yield Segment.line()


def fold(line: str, width: int, indent: str = "  ") -> list[str]:
    """`line` as it is when it fits `width`, else broken at spaces into pieces that do (a word longer
    than the width stays whole: cutting a figure would be worse than a long line)."""
    pieces: list[str] = []
    while len(line) > width:
        cut = line.rfind(" ", len(indent) + 1 if pieces else 1, width + 1)
        if cut <= 0:
            break
        pieces.append(line[:cut].rstrip())
        line = indent + line[cut:].lstrip()
    return [*pieces, line]


def plural(n: int, word: str) -> str:
    """`1 worker`, `3 workers`."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def duration_us(us: float) -> str:
    """A duration given in microseconds in the largest unit it fills: `200 ms` for 200000, `1.5 s`, `250 µs`
    (the units `parse_duration` reads), exact to the microsecond; `0 µs` for none."""
    scale, unit = next(((s, u) for s, u in ((1_000_000, "s"), (1000, "ms")) if abs(us) >= s), (1, "µs"))
    return f"{us / scale:.6f}".rstrip("0").rstrip(".") + f" {unit}"
