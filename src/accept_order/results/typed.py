"""Build a frozen dataclass from a dict read from a file, checking every value's type and range.

A result file may be truncated, hand-edited or hostile: a wrong type or an absurd number becomes one
ResultFileError naming the field, never a traceback deep in a renderer.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Sequence
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

from ..errors import ResultFileError
from ..spec import renamed

T = TypeVar("T")
MAX_INT = 1 << 63  # counts, pids, microseconds: anything larger is not from a real run
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _fits(value: Any, hint: Any) -> bool:
    origin = get_origin(hint)
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in get_args(hint))
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool) and -MAX_INT < value < MAX_INT
    if hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return ok and math.isfinite(value) and abs(value) < MAX_INT
    if hint is str:
        return isinstance(value, str)
    if origin is tuple:
        args = get_args(hint)
        if not isinstance(value, list | tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(v, args[0]) for v in value)
        return len(args) == len(value) and all(_fits(v, a) for v, a in zip(value, args, strict=True))
    if origin is dict or hint is dict:
        return isinstance(value, dict)
    if origin is list:
        return isinstance(value, list)
    return True  # a nested type with its own checks


def build(cls: type[T], data: Any) -> T:
    """`cls(**data)` for the fields `cls` knows, after checking each value against its annotation."""
    name = cls.__name__
    if not isinstance(data, dict):
        raise ResultFileError(f"malformed result: {name} is not an object")
    data = renamed(cls, data)  # fields saved under an older name (ServerSpec's "server" is its kind)
    values: dict[str, Any] = {}
    hints = _hints(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if required:
                raise ResultFileError(f"malformed result: {name} has no {f.name!r}")
            continue
        value = data[f.name]
        if not _fits(value, hints[f.name]):
            raise ResultFileError(f"malformed result: {name}.{f.name} has a wrong type or is out of range")
        if get_origin(hints[f.name]) is tuple and isinstance(value, list):
            value = tuple(value)
        values[f.name] = value
    return cls(**values)


def check_records(records: Sequence[Any], workers: int) -> None:
    """Each served record names a worker of this run (0..workers-1); failed ones name none."""
    for rec in records:
        if rec.worker is not None and not 0 <= rec.worker < workers:
            raise ResultFileError(
                f"malformed result: connection {rec.seq} names worker {rec.worker}, not one of 0..{workers - 1}"
            )


def check_server(server: Any) -> Any:
    """A saved server spec names a mode this version knows (a file naming another is refused, exit 1:
    the file is wrong, not the command line)."""
    from ..servers.registry import KINDS, known_mode

    if server.kind not in KINDS:
        raise ResultFileError(f"malformed result: it names server {server.kind!r}, which this version does not know")
    if known_mode(server.kind, server.mode) is None:
        raise ResultFileError(f"malformed result: it names mode {server.mode!r}, which this version does not know")
    if not 1 <= server.workers <= 1 << 20:
        raise ResultFileError(f"malformed result: {server.workers} workers is out of range")
    return server


def runs_list(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A document's "runs": a list (of run documents), or TypeError."""
    runs = doc["runs"]
    if not isinstance(runs, list):
        raise TypeError("'runs' is not a list")
    return runs


def skipped_map(doc: dict[str, Any]) -> dict[str, str]:
    """A document's "skipped": a map of variant to why it did not run, or TypeError."""
    skipped = doc.get("skipped", {})
    if not isinstance(skipped, dict) or not all(isinstance(v, str) for v in skipped.values()):
        raise TypeError("'skipped' is not a map of mode to reason")
    return skipped
