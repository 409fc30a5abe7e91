"""Text for the terminal: strings from files and arguments with their control characters escaped, and
fixed-width lines that rich must not touch."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment

# C0 controls, DEL, C1 controls (ESC and CSI start terminal escape sequences, BEL ends OSC ones), the
# bidirectional controls that reorder what is displayed ("Trojan source"), the Unicode line separators
# (our output is line-oriented) and lone surrogates (which JSON "\udXXX" escapes and undecodable bytes in
# arguments produce, and which cannot be encoded for the terminal: printing one would raise).
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def escape_controls(text: object) -> str:
    """`text` as a string that is safe to print on a terminal: every control character (newline and tab
    included), bidi control and lone surrogate becomes a visible escape such as `\\x1b` or `\\n`, so
    nothing read from a file or given as an argument can move the cursor, retitle the window or split a
    line. Rich markup needs no escaping: every console of this tool prints with markup off."""
    if isinstance(text, str):
        raw = text
    else:
        try:
            raw = str(text)
        except Exception:  # e.g. an int over the str-conversion digit limit: describe, do not crash
            raw = f"<unprintable {type(text).__name__}>"
    return CONTROLS.sub(_escape_char, raw)


def escape_controls_everywhere(value: Any) -> Any:
    """A JSON value with `escape_controls` applied to every string in it (keys too)."""
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, dict):
        return {escape_controls_everywhere(k): escape_controls_everywhere(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escape_controls_everywhere(v) for v in value]
    return value


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
