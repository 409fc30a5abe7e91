"""Adding latency results of the same experiment exactly: from several client hosts driving one server at
once, or from repeated sessions. Histograms add (they are exact counts per microsecond), as do failures by
errno, connections per worker and the workers' own counters; the drivers are all kept.

"The same experiment" is checked: the same kind, and for every run the same server (mode, workers, work,
backlog, batch, ...; the port may differ) and the same load shape (concurrency, rate, timeout); the amount
(connections or duration) may differ. Time: repeated sessions add their wall times (throughput is then
served over the total time); clients running at the same moment (`concurrent`) take the longest.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ..errors import ResultFileError
from ..loads.summary import LoadSummary

MERGEABLE = ("latency", "latency-compare", "sweep")
_SERVER_IGNORED = ("port",)
_LOAD_IGNORED = ("connections", "duration_s", "driver_procs")


def _runs(kind: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc["runs"]) if kind != "latency" else [doc]


def _differs(a: dict[str, Any], b: dict[str, Any], ignored: Sequence[str]) -> str | None:
    for key in sorted(set(a) | set(b)):
        if key not in ignored and a.get(key) != b.get(key):
            return f"{key} {a.get(key)!r} vs {b.get(key)!r}"
    return None


def _check_same(name: str, first: dict[str, Any], run: dict[str, Any], index: int) -> None:
    for part, ignored in (("server", _SERVER_IGNORED), ("load", _LOAD_IGNORED)):
        diff = _differs(first[part], run[part], ignored)
        if diff:
            raise ResultFileError(f"{name} is not the same experiment (run {index + 1}: {part} {diff})")


def _add_counters(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The workers' counters, worker by worker (index); numbers add, the first file's pid stays."""
    merged = {c["index"]: dict(c) for c in a}
    for c in b:
        mine = merged.setdefault(c["index"], dict(c))
        if mine is c:
            continue
        for key, value in c.items():
            if key in ("index", "pid", "affinity"):
                continue
            if key == "max_batch" and isinstance(value, int):
                mine[key] = max(mine.get(key) or 0, value)
            elif isinstance(value, int | float) and isinstance(mine.get(key), int | float):
                mine[key] = mine[key] + value
    return [merged[i] for i in sorted(merged)]


def _add_run(into: dict[str, Any], run: dict[str, Any], concurrent: bool) -> None:
    """Add `run` to `into`: the load's summary (locust-style extend), the workers' counters, the amount."""
    added = LoadSummary.from_dict(into).extend(LoadSummary.from_dict(run), concurrent)
    into.update(added.to_dict())
    into.pop("summary", None)  # derived; rebuilt when the result is built again
    into["counters"] = _add_counters(list(into.get("counters", [])), list(run.get("counters", [])))
    load = into["load"]
    for key in ("connections", "duration_s"):
        if isinstance(load.get(key), int | float) and isinstance(run["load"].get(key), int | float):
            load[key] = load[key] + run["load"][key] if not (concurrent and key == "duration_s") else load[key]
    into["interrupted"] = bool(into.get("interrupted")) or bool(run.get("interrupted"))


def merge(documents: Sequence[tuple[str, str, dict[str, Any]]], concurrent: bool = False) -> tuple[str, dict[str, Any]]:
    """(name, kind, version-2 document) of each file -> (kind, merged document). ResultFileError when they
    are not latency results of the same experiment."""
    if len(documents) < 2:
        raise ResultFileError("merge needs two result files or more")
    name0, kind, first = documents[0]
    if kind not in MERGEABLE:
        raise ResultFileError(f"{name0} holds a {kind} result; merge adds latency results ({', '.join(MERGEABLE)})")
    merged = copy.deepcopy(first)
    runs = _runs(kind, merged)
    sources = [{"file": name0, "started_at": _started(first)}]
    for name, other_kind, doc in documents[1:]:
        if other_kind != kind:
            raise ResultFileError(f"{name} holds a {other_kind} result, {name0} a {kind} one: not the same experiment")
        others = _runs(other_kind, doc)
        if len(others) != len(runs):
            raise ResultFileError(f"{name} has {len(others)} runs, {name0} {len(runs)}: not the same experiment")
        for index, (into, run) in enumerate(zip(runs, others, strict=True)):
            _check_same(name, into, run, index)
            _add_run(into, run, concurrent)
        sources.append({"file": name, "started_at": _started(doc)})
    for run in runs:
        evidence = dict(run.get("evidence", {}))
        evidence["merged_from"] = {"files": sources, "concurrent": concurrent}
        run["evidence"] = evidence
    return kind, merged


def _started(doc: dict[str, Any]) -> str | None:
    run = doc["runs"][0] if "runs" in doc and doc["runs"] else doc
    env = run.get("environment") or {}
    return env.get("started_at") if isinstance(env, dict) else None
