"""What every shape of a result document is (results/schema.py has the shapes): the base class, the error a
value that does not fit raises, its path in the document and how a value from a file is shown in it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..core.text import escape_controls

# Counts, microseconds, seconds: 2**53 is where a float stops holding every integer, and ~285 years in
# microseconds; anything larger is not from a real run (and 1e30 breaks arithmetic that assumes less).
MAX_COUNT = 1 << 53
MAX_TEXT = 1 << 16  # characters in one string: titles, errors, host names are far shorter


class SchemaError(Exception):
    """A value that does not fit its shape: where it is in the document, and what is wrong with it."""

    def __init__(self, at: str, problem: str) -> None:
        super().__init__(f"{at or 'the document'}: {problem}")
        self.at = at
        self.problem = problem


def child(at: str, key: str | int) -> str:
    """The path of `key` inside the value at `at`: `runs[0]`, `runs[0].histogram`."""
    if isinstance(key, int):
        return f"{at}[{key}]"
    return f"{at}.{key}" if at else key


def brief(value: object) -> str:
    """A value from a file, short, JSON-spelled and with controls escaped, for an error message."""
    if isinstance(value, dict | list):
        return "an object" if isinstance(value, dict) else "a list"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return "a very large number"
    if isinstance(value, str) and len(value) > 40:
        value = value[:40] + "..."
    try:
        return escape_controls(json.dumps(value))
    except (TypeError, ValueError):
        return escape_controls(repr(value)[:40])


def wrong(at: str, expected: str, value: object) -> SchemaError:
    return SchemaError(at, f"expected {expected}, got {brief(value)}")


REAL_TYPES = {int, float}
LIST_TYPES = {list, tuple}  # what a list may be: JSON's, or a tuple from the Python API


def is_real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def bounded(expected: str, value: object) -> str:
    """`expected`, saying the bound when the value is a number past what any field may hold (1e30)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > MAX_COUNT:
        return f"{expected} within 2**53"
    return expected


class Shape:
    """What a JSON value must be. `check` raises SchemaError (with the value's path) or returns None.

    `fits` answers the same question without a path: the containers ask it of each item first and build the
    item's path (`runs[0].histogram.counts[3]`) only for an item that does not fit, to `check` it for the
    error. Most of a file fits, and making a path string for each of its values was most of the check's
    time. `fits` may say False when unsure (then `check` decides), never True for a value `check` refuses."""

    expected = "a value"

    def check(self, value: Any, at: str) -> None:
        raise NotImplementedError

    def fits(self, value: Any) -> bool:
        return False

    def fits_all(self, values: Sequence[Any]) -> bool:
        """Whether every one of `values` fits: a list's items, an object's values (the scalars' own answer
        is a few calls over the whole list, for histograms of thousands of pairs)."""
        return all(map(self.fits, values))
