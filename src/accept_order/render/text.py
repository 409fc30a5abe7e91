"""Text for the terminal: strings from files and arguments with their control characters escaped, and
fixed-width lines that rich must not touch."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.text import Text

from ..core.text import plural as plural  # `1 worker`, `4 processes`: here for the reports


class Verbatim:
    """Lines printed exactly as given: never re-flowed (mmhistogram output must stay byte-comparable with
    the seed's). Printed with crop=False they are not cut at the console width; a line wider than the
    terminal is broken at its last space that fits, and goes on indented, rather than spilling over."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            for piece in [line] if options.no_wrap else fold(line, options.max_width):
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


class Hanging:
    """A paragraph set `indent` columns in whose wrapped lines keep that indent (rich starts them at column 0:
    "  listeners (start): ..., Send-Q" over "511 (from netlink)"). Not wrapped at all where the console says
    so (no_wrap: a report off a terminal)."""

    def __init__(self, text: Text, indent: int) -> None:
        self.text = text
        self.indent = indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        overflow = options.overflow if options.no_wrap else self.text.overflow or "fold"
        width = max(options.max_width - self.indent, 1)
        lines = self.text.wrap(console, width, justify=self.text.justify, overflow=overflow, no_wrap=options.no_wrap)
        for line in lines:
            yield Segment(" " * self.indent)
            yield from line.render(console)
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        inner = Measurement.get(console, options, self.text)
        return Measurement(inner.minimum + self.indent, inner.maximum + self.indent)


def _indented(text: Text, extra: int = 0) -> RenderableType:
    """`text` as it is when no line of it is indented (and `extra` is 0), else a Hanging per line, set in by its
    own leading spaces plus `extra`."""
    lines = text.split("\n", allow_blank=True)
    if not extra and not any(line.plain.startswith(" ") for line in lines):
        return text
    parts: list[RenderableType] = []
    for line in lines:
        own = len(line.plain) - len(line.plain.lstrip(" "))
        indent = own + extra
        parts.append(Hanging(line[own:], indent) if indent and line.plain.strip() else line)
    return parts[0] if len(parts) == 1 else Group(*parts)


def hanging(renderable: RenderableType) -> RenderableType:
    """`renderable` with every indented paragraph in it (a line of a Text, or a string, that starts with spaces,
    at the top or in a Group; a Text padded on the left only) set to keep its indent when it wraps."""
    if isinstance(renderable, str):
        return _indented(Text(renderable)) if renderable.startswith(" ") or "\n " in renderable else renderable
    if isinstance(renderable, Text):
        return _indented(renderable)
    if isinstance(renderable, Group):
        return Group(*(hanging(item) for item in renderable.renderables), fit=renderable.fit)
    if isinstance(renderable, Padding) and isinstance(renderable.renderable, Text) and renderable.left:
        if not (renderable.top or renderable.right or renderable.bottom):
            return _indented(renderable.renderable, renderable.left)
    return renderable


def trimmed(segments: Iterable[Segment]) -> Iterator[Segment]:
    """`segments` with the spaces at the end of every line left out (rich pads a wrapped line, a table's last
    column, to the width: invisible on a terminal, trailing spaces in a file)."""
    for line, ends in Segment.split_lines_terminator(segments):
        while line and not line[-1].control:
            text = line[-1].text.rstrip(" ")
            if text:
                line[-1] = Segment(text, line[-1].style, line[-1].control)
                break
            line.pop()
        yield from line
        if ends:
            yield Segment.line()


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
