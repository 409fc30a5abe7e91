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
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import service_time
from ..core.errors import ResultFileError
from ..core.load_summary import LoadSummary
from .envelope import FileKind
from .merge_differs import as_ran, backlogs_read, differs
from .merge_listeners import add_listener_drops
from .merge_namespaces import counters_apart
from .merge_overlap import shared_start, starts
from .merge_rows import keep_numbering, placement, realigned, unfixed, widen
from .merge_stops import stopped_sources
from .merge_titles import titled_sources

_SERVER_IGNORED = ("port",)
# clients: merged (_add_clients); driver: what was asked for (auto), not what ran: the loops are compared instead
_LOAD_IGNORED = ("connections", "duration_s", "driver_procs", "clients", "driver")


def _runs(several: bool, doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc["runs"]) if several else [doc]


def _amount(load: dict[str, Any]) -> str:
    """What a load's amount is: a number of connections or a time (the files' loads were checked whole)."""
    if load.get("connections") is not None:
        return f"{load['connections']} connections"
    return f"a {load.get('duration_s')} s duration"


def _check_same(name: str, first: dict[str, Any], run: dict[str, Any], index: int) -> None:
    parts = (("server", (*_SERVER_IGNORED, *unfixed(first))), ("load", _LOAD_IGNORED))  # both named where both differ
    said = [f"{part}: {diff}" for part, ignored in parts if (diff := differs(first[part], run[part], ignored))]
    if said:
        raise ResultFileError(f"{name} is not the same experiment (run {index + 1}: {'; '.join(said)})")
    # The loop the load generator ran (DriverStats.loop: a file before 0.3 had only epoll's), not the --driver
    # asked for: auto is io_uring here and epoll where io_uring cannot run, and their latencies differ.
    loops = [{d.get("loop") or "epoll" for d in r.get("drivers") or ()} for r in (first, run)]
    if all(loops) and loops[0] != loops[1]:
        ran = " vs ".join(" and ".join(sorted(s)) for s in loops)
        raise ResultFileError(f"{name} is not the same experiment (run {index + 1}: the load generator ran on {ran})")
    # How much may differ, but not whether the load was a number of connections or a time.
    if (first["load"].get("connections") is None) != (run["load"].get("connections") is None):
        raise ResultFileError(
            f"{name} is not the same experiment (run {index + 1}: {_amount(first['load'])} vs "
            f"{_amount(run['load'])}: one ran a number of connections, the other for a time)"
        )


def check_distinct_files(paths: Sequence[str]) -> None:
    """ResultFileError when two of `paths` are one file (the same name twice, ./a and a, a link to it):
    merging it with itself would count every connection twice. Paths that cannot be read are left to
    the loading, which says why."""
    seen: dict[tuple[int, int], str] = {}
    for path in paths:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        first = seen.get((st.st_dev, st.st_ino))
        if first is not None:
            from ..core.text import escape_controls

            raise ResultFileError(
                f"{escape_controls(first)} and {escape_controls(path)} are the same file: merging a file with "
                "itself would count every connection twice"
            )
        seen[(st.st_dev, st.st_ino)] = path


def _counts(run: dict[str, Any]) -> tuple[Counter[int], Counter[str]]:
    return Counter({us: n for us, n in run["histogram"]["counts"]}), Counter(run.get("errors", {}))


def _holds(a: dict[str, Any], b: dict[str, Any], several: bool) -> bool:
    """Whether document `a` already holds `b`'s measurement: each run of `b` started when one that went
    into `a` did, and every sample and failure of `b` is in `a` (`a` is `b`, a copy of it, or a merge
    that `b` went into). Two measurements do not share both by chance."""
    runs_a, runs_b = _runs(several, a), _runs(several, b)
    if len(runs_a) != len(runs_b) or not runs_a:
        return False
    for run_a, run_b in zip(runs_a, runs_b, strict=True):
        if run_b["environment"].get("started_at") not in starts(run_a):
            return False
        (hist_a, errors_a), (hist_b, errors_b) = _counts(run_a), _counts(run_b)
        if hist_b - hist_a or errors_b - errors_a:  # Counter subtraction keeps what b has more of
            return False
    return True


def _check_counted_once(documents: Sequence[tuple[str, str, dict[str, Any]]], several: bool) -> None:
    """ResultFileError when a measurement would be counted twice: one file is another, or is in it."""
    for i, (name, kind, doc) in enumerate(documents):
        for other, other_kind, earlier in documents[:i]:
            if other_kind != kind:
                continue  # refused as another experiment
            holds, held = _holds(earlier, doc, several), _holds(doc, earlier, several)
            shared = None if holds or held else shared_start(_runs(several, earlier), _runs(several, doc))
            if holds and held:
                what = f"{other} and {name} hold the same measurement"
            elif holds or held:
                what = (
                    f"{other} already holds {name}'s measurement"
                    if holds
                    else f"{name} already holds {other}'s measurement"
                )
            elif shared:
                what = f"{other} and {name} both hold one file's measurement"
            else:
                continue
            when = shared or _started(doc) or "at an unknown time"
            raise ResultFileError(f"{what} (started {when}): merging would count it twice")


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
    witness = _add_witness(into, run)  # before the counters add: each file's pids name its own workers
    into["evidence"] = _add_evidence(dict(into.get("evidence", {})), run.get("evidence", {}), hosts)
    if witness is not None:
        into["evidence"]["witness"] = witness


def _pids(doc: Mapping[str, Any]) -> dict[Any, Any]:
    """A file's workers: pid -> index, as its counters name them."""
    return {c.get("pid"): c.get("index") for c in doc.get("counters", []) if isinstance(c, dict)}


def _add_witness(into: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any] | None:
    """Two launches' server logs as the merged load's, where both have one of the same source: the added file's
    rows name its workers by the first file's pids (worker by worker, as the counters add), and its client ports
    are tagged with its start, so that a port each launch used is two connections, not one. A row naming no
    worker of its own file stays no worker's. None where a file has none, or they are not alike: one file's log
    beside every file's replies read 'h2o access log disagrees: requests per worker 181 177 199 188, the
    replies 266 280 296 282' of two runs that each agreed with their own (277acec), and dropping both lost the
    check of each."""
    mine, theirs = into.get("evidence", {}).get("witness"), run.get("evidence", {}).get("witness")
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return None
    if any(mine.get(key) != theirs.get(key) for key in ("source", "numbered_by")):
        return None
    rows, their_rows = mine.get("requests"), theirs.get("requests")
    if not isinstance(rows, list) or not isinstance(their_rows, list):
        return None
    first = {index: pid for pid, index in _pids(into).items()}
    to_first = {pid: first.get(index) for pid, index in _pids(run).items()}
    launch = str(_started(dict(run)) or id(run))
    added = []
    for row in their_rows:
        if not isinstance(row, list) or not row:
            added.append(row)
            continue
        port = row[1:2]  # an int of one launch, or a merged file's tagged string
        tagged = [f"{launch}/{port[0]}" if isinstance(port[0], int) else port[0]] if port else []
        added.append([to_first.get(row[0]), *tagged, *row[2:]])
    dropped = [d for d in (mine.get("dropped", 0), theirs.get("dropped", 0)) if isinstance(d, int)]
    return mine | {"requests": [*rows, *added], "dropped": sum(dropped)}


def _add_evidence(into: dict[str, Any], run: Mapping[str, Any], hosts: tuple[Any, Any]) -> dict[str, Any]:
    """The evidence of one file's window made the merged load's: the kernel counters' deltas add; observe's
    per-worker counts (--observe-on) add by host and pid where every file has them, else none are kept; the
    host's CPU before and after (`machine`) is one window's and goes: beside every file's load generators, the
    first file's ticks called others' CPU 'this run's own' (a merge of two cluster runs said 36% own, 59%
    others', where its first file alone had said 22% and 73%). `hosts`: the two files' hostnames."""
    into.pop("machine", None)
    into.pop("witness", None)  # one launch's server log: _add_witness adds the two where they are alike
    _add_kernel_counters(into, run, hosts)
    add_listener_drops(into, run)
    _add_accept_counts(into, run)
    observed = _add_observed(into.get("observed_on"), run.get("observed_on"))
    if observed is None:
        into.pop("observed_on", None)
    else:
        into["observed_on"] = observed
    return into


def _add_accept_counts(into: dict[str, Any], run: Mapping[str, Any]) -> None:
    """The kernel's accept counts of an attached server (latency --attach) added, as `served` adds: each worker's and
    the master's own (master_accepted, where every file counted it). Kept from the first file alone, a merge of two
    runs read 'the attached master accepted 130 itself beside the 311 its children accepted' (130 and 59)."""
    mine, theirs = into.get("accept_counts"), run.get("accept_counts")
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return
    if not (mine.get("available") and theirs.get("available")):
        # counted in one file's window only: added, they would read as the whole merged load's accepts
        if mine.get("available") or theirs.get("available"):
            into["accept_counts"] = {"available": False, "why": "not counted in every merged file", "counts": {}}
        return
    added = dict(mine)
    for key in ("counts", "appeared"):
        if isinstance(mine.get(key), dict) and isinstance(theirs.get(key), dict):
            added[key] = {pid: mine[key].get(pid, 0) + theirs[key].get(pid, 0) for pid in mine[key] | theirs[key]}
    if isinstance(mine.get("master_accepted"), int) and isinstance(theirs.get("master_accepted"), int):
        added["master_accepted"] = mine["master_accepted"] + theirs["master_accepted"]
    else:
        added.pop("master_accepted", None)  # a file from before it: not counted there
    if before := max(mine.get("reading_before_s", 0), theirs.get("reading_before_s", 0)):  # short in either file
        added["reading_before_s"] = before
    into["accept_counts"] = added


def _has_counters(evidence: Mapping[str, Any]) -> bool:
    return bool(evidence.get("counters_available")) and isinstance(evidence.get("counters"), dict)


def _add_kernel_counters(into: dict[str, Any], run: Mapping[str, Any], hosts: tuple[Any, Any]) -> None:
    """The kernel counters' deltas of two files' windows, added where both have them. Where one lacks them (a
    file from before them, a host without /proc/net/netstat), none are kept and `counters_unmerged` says why:
    one file's 'none of 8 moved' read as the whole load's. Files from different hosts (environment.hostname)
    add each host's namespace's counters: `counters_hosts` names them, which the render says instead of
    'this host'; shared_namespace holds where any file's namespace was shared. One host's read in two namespaces
    (an attached server's and the tool's: merge_namespaces) are none kept either."""
    mine, theirs = _has_counters(into), _has_counters(run)
    apart = counters_apart(into, run) if mine and theirs and hosts[0] == hosts[1] else None
    if not mine or not theirs or apart:
        for key in ("counters", "counters_watched"):
            into.pop(key, None)
        if mine or theirs:  # in neither: 'not available', as each file said
            into["counters_unmerged"] = (
                apart or "not in every merged file (one from before them, or a host without them)"
            )
        into["counters_available"] = False
        return
    added = Counter(into["counters"]) + Counter(run["counters"])
    into["counters"] = {name: added[name] for name in sorted(added) if added[name]}
    into["counters_watched"] = sorted(set(into.get("counters_watched", [])) | set(run.get("counters_watched", [])))
    into["shared_namespace"] = bool(into.get("shared_namespace", True)) or bool(run.get("shared_namespace", True))
    # the first file's host is into's environment's (hosts[0]) until a file from another host is added
    named = {h for h in (*into.get("counters_hosts", [hosts[0]]), hosts[1]) if isinstance(h, str)}
    if len(named) > 1:
        into["counters_hosts"] = sorted(named)


def _add_observed(mine: Any, theirs: Any) -> list[dict[str, Any]] | None:
    """Two files' --observe-on evidence as one: the same hosts and workers (by pid), their counts added; None
    where they differ (or one has none): a count of one file's accepts beside every file's replies would read
    as a disagreement, or as an agreement it is not."""
    if not isinstance(mine, list) or not isinstance(theirs, list) or len(mine) != len(theirs):
        return None
    out = []
    for a, b in zip(mine, theirs, strict=True):
        pids = [w.get("pid") for w in a.get("workers", [])]
        if a.get("host") != b.get("host") or pids != [w.get("pid") for w in b.get("workers", [])]:
            return None
        workers = [_add_observed_worker(wa, wb) for wa, wb in zip(a["workers"], b["workers"], strict=True)]
        wall = [w for w in (a.get("wall_s"), b.get("wall_s")) if isinstance(w, int | float)]
        # each file's own verdict (joined's: a worker no reply named agrees at 0 accepts; untraced: None), not
        # one recomputed from the sums, which called a worker that took nothing in either file a difference
        agrees = None if a.get("agrees") is None or b.get("agrees") is None else bool(a["agrees"] and b["agrees"])
        traced = bool(a.get("traced") and b.get("traced"))  # one file's sampled accepts make the sum approximate
        merged = a | {"workers": workers, "wall_s": sum(wall), "agrees": agrees, "traced": traced, "notes": []}
        if isinstance(a.get("counters"), dict) and isinstance(b.get("counters"), dict):
            names = a["counters"].keys() | b["counters"].keys()
            merged["counters"] = {n: a["counters"].get(n, 0) + b["counters"].get(n, 0) for n in sorted(names)}
        else:
            merged.pop("counters", None)
        out.append(merged)
    return out


def _add_observed_worker(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """One worker's --observe-on counts in two files, added: a count one file lacks (None: untraced accepts,
    an unread CPU) makes the sum unknown, except the replies' count, where None is 'no reply named it' (0)."""
    worker = dict(a)
    for key in a.keys() | b.keys():
        x, y = a.get(key), b.get(key)
        if key in ("pid", "tid") or not (isinstance(x, int | float) or isinstance(y, int | float)):
            continue  # who it is, or nothing counted in either
        if key == "served_by_replies":
            x, y = x or 0, y or 0  # None: no reply named it
        worker[key] = x + y if isinstance(x, int | float) and isinstance(y, int | float) else None
    return worker


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
    _check_counted_once(documents, several)
    merged = copy.deepcopy(first)
    runs = _runs(several, merged)
    sources = [{"file": name0, "started_at": _started(first)}]
    for name, other_kind, doc in documents[1:]:
        if other_kind != kind:
            raise ResultFileError(
                f"{name} holds {_a(other_kind)} result, {name0} {_a(kind)} one: not the same experiment"
            )
        others = _runs(several, doc)
        if len(others) != len(runs):
            raise ResultFileError(f"{name} has {len(others)} runs, {name0} {len(runs)}: not the same experiment")
        for index, (into, run) in enumerate(zip(runs, others, strict=True)):
            _check_same(name, _runs(several, first)[index], run, index)  # the first file's: `into` may have grown
            placed = placement(into, run, name, index)  # rows that are the same worker (merge_rows.py)
            keep_numbering(into, run)
            _add_run(into, run if placed is None else realigned(run, placed), concurrent)
            widen(into)
        sources.append({"file": name, "started_at": _started(doc)})
    for index, run in enumerate(runs):
        files = stopped_sources(index, documents, titled_sources(run, index, documents, sources))
        run["evidence"] = {**run.get("evidence", {}), "merged_from": {"files": files, "concurrent": concurrent}}
    return kind, merged


def _started(doc: dict[str, Any]) -> str | None:
    run = doc["runs"][0] if "runs" in doc and doc["runs"] else doc
    env = run.get("environment") or {}
    return env.get("started_at") if isinstance(env, dict) else None


def _a(kind: str) -> str:
    """The kind with its article: 'an observe', 'an inspect', 'an atlas' ('a observe result' before)."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"
