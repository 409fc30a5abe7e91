"""Adding latency results of the same experiment exactly: from several client hosts driving one server at
once, or from repeated sessions. Histograms add (they are exact counts per microsecond), as do failures by
errno, connections per worker and the workers' own counters; the drivers are all kept.

"The same experiment" is checked: the same kind, and for every run the same server (mode, workers, work,
backlog, batch, ...; the port may differ) and the same load shape (concurrency, rate, timeout, and whether
it ran a number of connections or for a time); the amount (how many connections, how long) may differ.
No measurement is counted twice: not a file given twice (under any name), nor a copy of one, nor a file
already merged into another one given with it, nor one in two merges given together (merge_overlap.py).
Time: repeated sessions add their wall times (throughput is then served over the total time); clients running
at the same moment (`concurrent`) take the longest.

Loads driven from client hosts (--clients) keep their hosts: a host in several files has its figures added
(LoadSummary.extend), and the load's `clients` names every host. The hosts may differ from file to file (one
file per group of clients). Where only some files have hosts, the merged runs have none: a per-host table of
part of the load would misstate how the whole was shared (and the file's check that the hosts add up to the
run would fail).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import service_time
from ..core.errors import ResultFileError
from ..core.load_summary import LoadSummary
from .envelope import FileKind
from .merge_differs import as_ran, backlogs_read, check_same
from .merge_evidence import add_evidence, add_witness
from .merge_nested import nested_sources
from .merge_overlap import check_counted_once, runs_of, started_at
from .merge_rows import keep_numbering, placement, realigned, widen
from .merge_stops import stopped_sources
from .merge_titles import titled_sources


def _add_counters(a: list[dict[str, Any]], b: list[dict[str, Any]], concurrent: bool = False) -> list[dict[str, Any]]:
    """The workers' counters, worker by worker (index: merge_rows.py); numbers add, the first file's pid stays. The most
    connections a worker held at once (held_peak) adds only for loads run at once (`concurrent`, at most
    that then: their peaks may not coincide); one after the other, it is the larger."""
    merged = {c["index"]: dict(c) for c in a}
    for c in b:
        mine = merged.setdefault(c["index"], dict(c))
        if mine is c:
            continue
        for key, value in c.items():
            if key == "pid" and not mine.get("pid"):
                mine["pid"] = value  # the first file's row no reply named (0): this file's worker took it
            if key in ("index", "pid", "affinity"):
                continue
            if (key == "max_batch" or key == "held_peak" and not concurrent) and isinstance(value, int):
                mine[key] = max(mine.get(key) or 0, value)
            elif key == "service_us" and isinstance(value, list):
                mine[key] = [list(p) for p in service_time.merged((mine.get(key) or [], value))]
            elif isinstance(value, int | float) and isinstance(mine.get(key), int | float):
                mine[key] = mine[key] + value
    return [merged[i] for i in sorted(merged)]


def _add_run(into: dict[str, Any], run: dict[str, Any], concurrent: bool) -> None:
    """Add `run` to `into`: the load's summary (locust-style extend), the workers' counters, the amount."""
    added = LoadSummary.from_dict(into).extend(LoadSummary.from_dict(run), concurrent)
    into.pop("first_requests", None)  # where one file did not keep its first requests apart, the sum cannot
    into.update(added.to_dict())
    into.pop("summary", None)  # derived; rebuilt when the result is built again
    into.pop("model", None)  # predicted from one run's figures: not the sum's
    into["counters"] = _add_counters(list(into.get("counters", [])), list(run.get("counters", [])), concurrent)
    load = into["load"]
    for key in ("connections", "duration_s"):
        if isinstance(load.get(key), int | float) and isinstance(run["load"].get(key), int | float):
            load[key] = load[key] + run["load"][key] if not (concurrent and key == "duration_s") else load[key]
    into["interrupted"] = bool(into.get("interrupted")) or bool(run.get("interrupted"))
    _add_clients(into, run)
    hosts = (into["environment"].get("hostname"), run["environment"].get("hostname"))
    witness = add_witness(into, run)  # before the counters add: each file's pids name its own workers
    into["evidence"] = add_evidence(dict(into.get("evidence", {})), run.get("evidence", {}), hosts)
    if witness is not None:
        into["evidence"]["witness"] = witness


def _add_clients(into: dict[str, Any], run: dict[str, Any]) -> None:
    """The client hosts of two loads as one's: every host named once (the first file's ssh settings where
    they differ: each file's hosts were reached its own way); none, and no per-host figures, where one of
    the loads was driven from its own host."""
    mine, theirs = into["load"].get("clients"), run["load"].get("clients")
    if not mine or not theirs or not into.get("hosts") or not run.get("hosts"):
        into["load"].pop("clients", None)
        into.pop("hosts", None)
        return
    names = list(mine["destinations"])
    mine["destinations"] = names + [d for d in theirs["destinations"] if d not in names]


def merge(
    documents: Sequence[tuple[str, str, dict[str, Any]]], kinds: Mapping[str, FileKind], concurrent: bool = False
) -> tuple[str, dict[str, Any]]:
    """(name, kind, version-2 document) of each file -> (kind, merged document). `kinds`: what the format
    knows of each kind (the mergeable ones add up). ResultFileError when they are not latency results of
    the same experiment."""
    if len(documents) < 2:
        raise ResultFileError("merge needs two result files or more")
    name0, kind, first = (documents := backlogs_read(as_ran(documents, kinds), kinds))[0]  # as they ran, as read
    mergeable = [name for name, known in kinds.items() if known.mergeable]
    # any file of a kind merge does not add is said so, whichever place it has ('lat.json ramp.json' said only
    # 'not the same experiment', as if two ramps would add)
    for name, held, _ in documents:
        if held not in mergeable:
            raise ResultFileError(
                f"{name} holds {_a(held)} result; merge adds latency results ({', '.join(mergeable)})"
            )
    several = kinds[kind].several
    check_counted_once(documents, several)
    merged = copy.deepcopy(first)
    runs = runs_of(several, merged)
    sources = [{"file": name0, "started_at": started_at(first)}]
    for name, other_kind, doc in documents[1:]:
        if other_kind != kind:
            raise ResultFileError(
                f"{name} holds {_a(other_kind)} result, {name0} {_a(kind)} one: not the same experiment"
            )
        others = runs_of(several, doc)
        if len(others) != len(runs):
            raise ResultFileError(f"{name} has {len(others)} runs, {name0} {len(runs)}: not the same experiment")
        for index, (into, run) in enumerate(zip(runs, others, strict=True)):
            check_same(name, runs_of(several, first)[index], run, index)  # the first file's: `into` may have grown
            placed = placement(into, run, name, index)  # rows that are the same worker (merge_rows.py)
            keep_numbering(into, run)
            _add_run(into, run if placed is None else realigned(run, placed), concurrent)
            widen(into)
        sources.append({"file": name, "started_at": started_at(doc)})
    for index, run in enumerate(runs):
        files = nested_sources(
            index, documents, stopped_sources(index, documents, titled_sources(run, index, documents, sources))
        )
        run["evidence"] = {**run.get("evidence", {}), "merged_from": {"files": files, "concurrent": concurrent}}
    return kind, merged


def _a(kind: str) -> str:
    """The kind with its article: 'an observe', 'an inspect', 'an atlas' ('a observe result' before)."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"
