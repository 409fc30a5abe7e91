"""merge: two files' evidence as the merged load's: the kernel counters' deltas, the accept counts of an attached
server, --observe-on's per-worker counts and the server's log (the witness), each added where every file has it
and dropped, with the reason where one is due, where one file lacks it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from .merge_listeners import add_listener_drops
from .merge_namespaces import counters_apart
from .merge_overlap import started_at


def _pids(doc: Mapping[str, Any]) -> dict[Any, Any]:
    """A file's workers: pid -> index, as its counters name them."""
    return {c.get("pid"): c.get("index") for c in doc.get("counters", []) if isinstance(c, dict)}


def add_witness(into: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any] | None:
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
    launch = str(started_at(dict(run)) or id(run))
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


def add_evidence(into: dict[str, Any], run: Mapping[str, Any], hosts: tuple[Any, Any]) -> dict[str, Any]:
    """The evidence of one file's window made the merged load's: the kernel counters' deltas add; observe's
    per-worker counts (--observe-on) add by host and pid where every file has them, else none are kept; the
    host's CPU before and after (`machine`) is one window's and goes: beside every file's load generators, the
    first file's ticks called others' CPU 'this run's own' (a merge of two cluster runs said 36% own, 59%
    others', where its first file alone had said 22% and 73%). `hosts`: the two files' hostnames."""
    into.pop("machine", None)
    into.pop("witness", None)  # one launch's server log: add_witness adds the two where they are alike
    into.pop("busy_waits", None)  # one run's looks over its own span: not the merged load's (no sum of shares)
    for each_alike in ("program", "counters_landed"):
        # kept where every file says the same: the program serving an attached server (servers/attached.py), and how
        # a --target's counters were found (probes/landing.py); the first file's alone made a report's words hang on
        # the files' order (lighttpd's limits or nginx's; a probe connection said of files that made none)
        if into.get(each_alike) != run.get(each_alike):
            into.pop(each_alike, None)
    _add_kernel_counters(into, run, hosts)
    add_listener_drops(into, run)
    _add_accept_counts(into, run)
    _add_cpu_waits(into, run)
    observed = _add_observed(into.get("observed_on"), run.get("observed_on"))
    if observed is None:
        into.pop("observed_on", None)
    else:
        into["observed_on"] = observed
    return into


def _add_cpu_waits(into: dict[str, Any], run: Mapping[str, Any]) -> None:
    """The server's threads' time on a CPU and waiting for one (probes/cpu_waits.py) added, where both files read
    them; else none kept (the model then gives each worker a CPU of its own, as for a file from before them)."""
    mine, theirs = into.get("cpu_waits"), run.get("cpu_waits")
    keys = ("run_s", "waited_s")
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        into.pop("cpu_waits", None)
    elif not all(isinstance(d.get(k), (int, float)) for d in (mine, theirs) for k in keys):
        into.pop("cpu_waits", None)
    else:
        into["cpu_waits"] = {k: round(mine[k] + theirs[k], 6) for k in keys}


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
    for key in ("counts", "appeared", "empty", "gaps"):  # gaps: by bucket, not pid
        if isinstance(mine.get(key), dict) and isinstance(theirs.get(key), dict):
            added[key] = {pid: mine[key].get(pid, 0) + theirs[key].get(pid, 0) for pid in mine[key] | theirs[key]}
        elif key in ("empty", "gaps"):
            added.pop(key, None)  # the empty accepts (gaps) of one file's window only: not the merged load's
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
