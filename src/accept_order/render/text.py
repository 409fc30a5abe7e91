"""Text for the terminal: strings from files and arguments with their control characters escaped, and
fixed-width lines that rich must not touch."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment

from ..core.text import plural as plural  # `1 worker`, `4 processes`: here for the reports


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


def durations_us(*values_us: float) -> list[str]:
    """Durations (µs) that share a line, all in one unit: s if each is at least a second, µs if each is under
    a millisecond, else ms (`0.2 ms` beside `50 ms`, not `200 µs` beside `50 ms`; all 0: `0 ms`). Exact to
    the microsecond."""
    nonzero = [abs(v) for v in values_us if v]
    if nonzero and min(nonzero) >= 1_000_000:
        scale, unit = 1_000_000, "s"
    elif nonzero and max(nonzero) < 1000:
        scale, unit = 1, "µs"
    else:
        scale, unit = 1000, "ms"
    return [f"{v / scale:.6f}".rstrip("0").rstrip(".") + f" {unit}" for v in values_us]


def duration_us(us: float) -> str:
    """A duration given in microseconds in the largest unit it fills: `200 ms` for 200000, `1.5 s`, `250 µs`
    (the units `parse_duration` reads), exact to the microsecond; `0 ms` for none (as `durations_us`)."""
    return durations_us(us)[0]
