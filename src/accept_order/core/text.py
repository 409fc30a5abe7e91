"""Text made inert: strings from files, /proc and arguments with their control characters escaped, so that
nothing read can move the terminal's cursor or split a line of CSV or of a report."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


@functools.cache
def controls() -> re.Pattern[str]:
    """C0 controls, DEL, C1 controls (ESC and CSI start terminal escape sequences, BEL ends OSC ones), the
    bidirectional controls that reorder what is displayed ("Trojan source"), the Unicode line separators
    (our output is line-oriented) and lone surrogates (which JSON "\\udXXX" escapes and undecodable bytes in
    arguments produce, and which cannot be encoded for the terminal: printing one would raise). Compiled on
    first use: its ranges beyond Latin-1 cost ~1.5 ms of every command's start-up, and printable ASCII (most
    of what is printed) never needs it (`has_controls`)."""
    return re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def has_controls(text: str) -> bool:
    """Whether `text` holds a character `controls()` matches. Printable text holds none: str.isprintable is
    false for every character of the pattern (Unicode's "Other" and "Separator" categories: controls, formats,
    surrogates, line and paragraph separators), so most text, a table's rules and "µs" with it, is answered
    without the pattern (compiling it cost ~2 ms of every report with a table)."""
    if text.isprintable():
        return False
    return controls().search(text) is not None


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
    if not has_controls(raw):
        return raw
    return controls().sub(_escape_char, raw)


def escape_controls_everywhere(value: Any) -> Any:
    """A JSON value with `escape_controls` applied to every string in it (keys too)."""
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, dict):
        return {escape_controls_everywhere(k): escape_controls_everywhere(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escape_controls_everywhere(v) for v in value]
    return value


def plural(n: int, word: str, many: str | None = None, grouped: bool = False) -> str:
    """`1 worker`, `3 workers`, `4 processes` (`many`: a word's own plural, where adding -s or -es is wrong;
    `grouped`: the count with thousands separated, `6,693 connections`)."""
    count = f"{n:,}" if grouped else str(n)
    if n == 1:
        return f"{count} {word}"
    if many is None:
        many = word + ("es" if word.endswith(("s", "x", "z", "ch", "sh")) else "s")
    return f"{count} {many}"


def and_join(words: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
