"""Result files: a versioned envelope around each result kind, and a loader per schema version.

Version 2 (this one) splits what served (`server`) from what drove (`load`) and carries the tool's
version. Version 1 files (accept-order 0.1) still load: `upgrade_v1` rewrites them into version 2's
shape, so every renderer reads one shape. `load` is the one way in for `show`, `merge`, `plot` and the
exports: it checks the whole document against its kind's shape (results/schema.py) before anything
reads it, so a wrong type, a negative count, NaN, an absurd size or a sum that does not add up is one
line naming the file and the field, never a traceback later.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import ResultFileError
from ..core.text import escape_controls
from .files import check_schema, file_text, read_document, write_document

if TYPE_CHECKING:
    from .schema import Shape

SCHEMA = "accept-order"
SCHEMA_VERSION = 2
V1Form = Literal["sequential", "concurrent"]


@dataclass(frozen=True)
class FileKind:
    """What the file format needs to know of a result kind (its experiment says it: experiments/): the shape
    a document of it must have; `several`: it keeps its runs in a list under "runs"; `v1`: the form its runs
    had in version 1 (None: the kind is newer); `mergeable`: `merge` adds its histograms and counts."""

    shape: Shape
    several: bool = False
    v1: V1Form | None = None
    mergeable: bool = False


KindOf = Callable[[str], "FileKind | None"]  # kind -> what the format knows of it (None: unknown here)


def tool_version() -> str:
    """The version a file records: the package's own (core/version.py, which pyproject.toml's must equal:
    tests/test_version_one.py). Not importlib.metadata's: importing it cost 35-40 ms of every --json save."""
    from ..core.version import VERSION

    return VERSION


def envelope(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "kind": kind,
        "tool": {"name": "accept-order", "version": tool_version()},
        **payload,
    }


def save(path: str | os.PathLike[str], kind: str, payload: dict[str, Any]) -> None:
    """Write atomically, as a regular file only (results/files.py refuses devices and symlinks)."""
    write_document(path, envelope(kind, payload))


def saved_text(kind: str, payload: dict[str, Any], shown: str) -> str:
    """The text `save` writes, for somewhere else (`shown`: where, for the error when it is not JSON)."""
    return file_text(envelope(kind, payload), shown)


def load(path: str | os.PathLike[str], kind_of: KindOf) -> tuple[str, dict[str, Any]]:
    """Read a result file of any supported version; returns (kind, document in version 2's shape), the
    document checked whole against its kind's shape, which `kind_of(kind)` gives (None: a kind this version
    does not know; experiments/documents.py passes the registry's). ResultFileError (one line) otherwise."""
    document = read_document(path)
    shown = escape_controls(os.fspath(path))
    kind, version = check_schema(document, shown, schema=SCHEMA, newest=SCHEMA_VERSION)
    known = kind_of(kind)
    if known is None:
        shown_kind = escape_controls(repr(kind))
        raise ResultFileError(f"{shown} holds a result of kind {shown_kind}, which this version cannot show")
    if version == 1:
        if known.v1 is None:
            raise ResultFileError(f"{shown} says it is a version 1 {kind} result; version 1 had no such kind")
        check(_v1_shape(known.v1, known.several), document, shown)
        document = upgrade_v1(known.v1, known.several, document)
    check(known.shape, document, shown, upgraded=version == 1)
    return kind, document


def check(shape: Shape, document: dict[str, Any], shown: str, upgraded: bool = False) -> None:
    """ResultFileError naming the file and the field when `document` does not fit `shape`."""
    from .shape import SchemaError

    try:
        shape.check(document, "")
    except SchemaError as exc:
        read_as = " (a version 1 file, read as version 2)" if upgraded else ""
        raise ResultFileError(f"{shown}: {exc}{read_as}") from None


# -- version 1 -> 2 -------------------------------------------------------------------------------
# Version 1 had six kinds, of two forms of run, and will never have more: the upgrades of the two forms are
# kept here, once, as history; each kind's experiment says which form its runs had (FileKind.v1).

_SERVER_KEYS = ("mode", "workers", "host", "port", "work_us", "work_iters", "backlog", "accept_batch", "cpus")


def _server(plan: dict[str, Any]) -> dict[str, Any]:
    return {k: plan[k] for k in _SERVER_KEYS if k in plan}


def _counters(counters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for c in counters:
        c = dict(c)
        if "returns" in c:  # version 1 called the wait calls' returns "returns"; now "wakeups"
            c["wakeups"] = c.pop("returns")
        out.append(c)
    return out


def _run_v1(doc: dict[str, Any]) -> dict[str, Any]:
    plan = doc["plan"]
    load = {"kind": "sequential", **{k: plan[k] for k in ("connections", "gap_ms", "timeout_s", "settle") if k in plan}}
    rest = {k: v for k, v in doc.items() if k != "plan"}
    return {**rest, "server": _server(plan), "load": load, "counters": _counters(doc["counters"])}


def _latency_v1(doc: dict[str, Any]) -> dict[str, Any]:
    plan, old = doc["plan"], doc.get("load", {})
    load = {
        "kind": "closed-loop",
        "connections": old.get("requests"),
        "duration_s": old.get("duration_s"),
        "concurrency": old.get("concurrency", 200),
        "driver_procs": old.get("driver_procs", 2),
        "timeout_s": plan.get("timeout_s", 10.0),
    }
    rest = {k: v for k, v in doc.items() if k not in ("plan", "load")}
    return {**rest, "server": _server(plan), "load": load, "counters": _counters(doc.get("counters", []))}


_V1_UPGRADES: dict[V1Form, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "sequential": _run_v1,
    "concurrent": _latency_v1,
}


def _v1_shape(form: V1Form, several: bool) -> Shape:
    """What the upgrades read of a version 1 file (the rest is checked in version 2's shape). Made where a
    file is read: saving a result imports no schema (its dataclasses are most of the file format's start-up)."""
    from .schema import Anything, ListOf, MapOf, Record

    counters = ListOf(MapOf(Anything()))
    if form == "sequential":
        run = Record({"plan": MapOf(Anything()), "counters": counters}, frozenset({"plan", "counters"}))
    else:
        run = Record({"plan": MapOf(Anything()), "load": MapOf(Anything()), "counters": counters}, frozenset({"plan"}))
    return Record({"runs": ListOf(run)}, frozenset({"runs"})) if several else run


def upgrade_v1(form: V1Form, several: bool, doc: dict[str, Any]) -> dict[str, Any]:
    one = _V1_UPGRADES[form]
    upgraded = {**doc, "runs": [one(run) for run in doc["runs"]]} if several else one(doc)
    upgraded["version"] = SCHEMA_VERSION
    upgraded["upgraded_from"] = 1
    return upgraded
