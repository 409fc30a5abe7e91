"""Build a frozen dataclass from a dict read from a file, after checking it against the dataclass's shape.

The same shapes (results/schema.py) that `load` checks a whole document with: a wrong type or an absurd
number becomes one ResultFileError naming the field, never a traceback deep in a renderer, whether the
dict came through `load` or straight from a caller of the Python API.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from types import UnionType
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

from ..core.errors import ResultFileError
from ..core.hosts import HostOutcome
from ..core.spec import renamed
from .schema import KNOWN, SchemaError, Shape, derive

T = TypeVar("T")
_HINTS: dict[type, dict[str, Any]] = {}
_SHAPES: dict[type, Shape] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _shape(cls: type) -> Shape:
    """The registered shape of `cls` (results/shapes.py), or one derived from it."""
    if cls not in _SHAPES:
        from . import host_shapes, shapes  # noqa: F401  (register the shared types' shapes)

        _SHAPES[cls] = KNOWN.get(cls) or derive(cls)
    return _SHAPES[cls]


def build(cls: type[T], data: Any) -> T:
    """`cls(**data)` for the fields `cls` knows, after checking `data` against its shape."""
    if isinstance(data, dict):
        data = renamed(cls, data)  # fields saved under an older name (ServerSpec's "server" is its kind)
    try:
        _shape(cls).check(data, cls.__name__)
    except SchemaError as exc:
        raise ResultFileError(f"malformed result: {exc}") from None
    values: dict[str, Any] = {}
    hints = _hints(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            value = data[f.name]
            values[f.name] = tuple(value) if get_origin(hints[f.name]) is tuple and isinstance(value, list) else value
            inner = _dataclass(hints[f.name])
            if inner is not None and isinstance(value, dict):  # checked whole above: built as its own type
                values[f.name] = inner.from_dict(value) if hasattr(inner, "from_dict") else build(inner, value)
    return cls(**values)


def _dataclass(hint: Any) -> Any:
    """The dataclass a field holds (`X` or `X | None`), None for any other type."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    present = [a for a in get_args(hint) if a is not type(None)] if get_origin(hint) in (Union, UnionType) else []
    return present[0] if len(present) == 1 and dataclasses.is_dataclass(present[0]) else None


def hosts_of(data: Mapping[str, Any]) -> tuple[HostOutcome, ...]:
    """The client hosts of a run (or of a burst's cell, a ramp's step) as `data["hosts"]` holds them, checked
    against their shape first (none: a load driven from this host, or an older file)."""
    from .host_shapes import HOSTS

    hosts = data.get("hosts", [])
    try:
        HOSTS.check(hosts, "hosts")
    except SchemaError as exc:
        raise ResultFileError(f"malformed result: {exc}") from None
    return tuple(HostOutcome.from_dict(h) for h in hosts)


def check_records(records: Sequence[Any], workers: int) -> None:
    """Each served record names a worker of this run (0..workers-1); failed ones name none."""
    for rec in records:
        if rec.worker is not None and not 0 <= rec.worker < workers:
            raise ResultFileError(
                f"malformed result: connection {rec.seq} names worker {rec.worker}, not one of 0..{workers - 1}"
            )


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
