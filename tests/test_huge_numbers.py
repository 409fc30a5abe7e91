"""An integer too large for a float (10**400, which JSON allows) in a float field is refused on load with one
line naming the field, exit 1, as any other bad field: never an OverflowError from converting it (issue 27 §2).

Python compares such an integer with a float exactly, but math.isfinite, float() and true division convert
it and raise; the schema checks bounds before anything converts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from accept_order.cli.app import main
from accept_order.core.errors import ResultFileError
from accept_order.experiments.documents import load

DATA = Path(__file__).parent / "data"
FIXTURES = sorted((DATA / "v1").glob("*.json")) + sorted((DATA / "v2").glob("*.json"))
HUGE = 10**400

Path_ = tuple[str | int, ...]


def with_value(document: dict[str, Any], at: Path_, value: Any) -> dict[str, Any]:
    """The document with one field changed: only the objects and lists on the way to it are copied (the rest is
    shared with `document`, which is only ever written out)."""
    copied = dict(document)
    parent: Any = copied
    for key in at[:-1]:
        child = parent[key]
        parent[key] = child = dict(child) if isinstance(child, dict) else list(child)
        parent = child
    parent[at[-1]] = value
    return copied


def numbers(value: Any, at: Path_ = ()) -> Iterator[Path_]:
    """The path of every number in a document (of a list, its first and last items)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from numbers(item, (*at, key))
    elif isinstance(value, list):
        for index in sorted({0, len(value) - 1} & set(range(len(value)))):
            yield from numbers(value[index], (*at, index))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield at


def spelled(at: Path_) -> str:
    """A path as SchemaError spells it: `runs[0].cells[0].drivers[0].wall_s`."""
    out = ""
    for key in at:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


# The fields the issue names: a run's wall_s, burst's drivers[].wall_s, the machine's load_average.
CASES = [
    ("v2/run.json", ("wall_s",)),
    ("v2/burst.json", ("runs", 0, "cells", 0, "drivers", 0, "wall_s")),
    ("v2/latency.json", ("evidence", "machine", "before", "load_average", 0)),
]


@pytest.mark.parametrize("command", ["show", "merge", "plot"])
@pytest.mark.parametrize(("fixture", "at"), CASES, ids=[spelled(at) for _, at in CASES])
def test_a_float_field_past_a_float_is_one_line_naming_it(
    fixture: str, at: Path_, command: str, tmp_path: Path
) -> None:
    document = json.loads((DATA / fixture).read_text())
    path, other = tmp_path / "huge.json", tmp_path / "other.json"
    path.write_text(json.dumps(with_value(document, at, HUGE)))
    other.write_text(json.dumps(document))
    args = {"show": [str(path)], "merge": [str(other), str(path)], "plot": [str(path), "-o", str(tmp_path / "p.png")]}
    result = CliRunner().invoke(main, [command, *args[command]], catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("accept-order: error: ") and f"{spelled(at)}: expected" in lines[0], lines[0]
    assert "a very large number" in lines[0]


def test_every_number_field_of_every_fixture_past_a_float_is_refused_or_harmless_on_load(tmp_path: Path) -> None:
    """Load checks the whole document: a number past a float in any field (the first item of a list stands
    for the others) is refused as one ResultFileError, or loads (a field the shape leaves open); nothing
    raises anything else. Minus 10**400 in one field for the other bound."""
    refused = 0
    path = tmp_path / "huge.json"
    for fixture in FIXTURES:
        document = json.loads(fixture.read_text())
        fields: dict[Path_, Path_] = {}
        for at in numbers(document):
            fields.setdefault(tuple(0 if isinstance(key, int) else key for key in at), at)
        for number, at in enumerate(fields.values()):
            path.write_text(json.dumps(with_value(document, at, -HUGE if number == 0 else HUGE)))
            try:
                load(path)
            except ResultFileError as exc:
                assert "\n" not in str(exc)
                refused += 1
    assert refused > 1000  # the fixtures' numbers are nearly all checked fields
