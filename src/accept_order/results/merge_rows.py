"""Which worker row of one latency file is which of another's, so that merge adds a worker's counts to its own.

A built-in server numbers its workers itself, and a launched or attached one by its process list, so two files'
rows of one index are the same worker (or, over two launches, the same place among them). A server elsewhere
(--target) is known by its replies alone, and the run says how they numbered its rows (evidence.rows_by,
core/protocol.py): where every reply named its worker's index ('worker I pid P', a built-in `serve`), each row is
the server's own index, and rows add index by index whatever their pids (a server restarted between two runs
keeps its numbering). Where the replies named a pid alone ('worker PID'), the tool numbered the rows in the order
the pids first answered (or pid order), so a file that saw the workers in another order, or in which a worker
answered nothing (its row: pid 0), has them on other rows: they are matched by pid wherever the files share a
worker, and where they share none, nothing tells which is which, and the merge is refused. A file from before
rows_by is matched the same way, as which numbering its replies used cannot be told. Rows added by index from
files whose pids differed each hold several processes and name one (evidence.rows_of_several_pids): no file is
matched to them by pid, as a worker whose pid they do not name would take a row of its own.
"""

from __future__ import annotations

import copy
from typing import Any

from ..core.errors import ResultFileError
from ..core.histogram import LatencyHistogram
from ..core.protocol import ROWS_BY_INDEX, ROWS_BY_PID
from ..core.spec import REMOTE_KIND

# the server kind whose rows are numbered by its replies (servers/remote.py): their index, or their pids' order
_NUMBERED_BY_REPLIES = frozenset({REMOTE_KIND})
# a run's per-worker lists of counts, one entry a worker
_PER_WORKER_COUNTS = ("served", "connections", "held_at_end")


def unfixed(run: dict[str, Any]) -> tuple[str, ...]:
    """The server's settings two files of one server may differ in: one known by its replies is kept with as
    many workers as answered (-w the least: lifecycle.as_answered), so a file, or a merge, that heard from more
    workers than another is still the same server."""
    return ("workers",) if run["server"].get("server") in _NUMBERED_BY_REPLIES else ()


def _pids(run: dict[str, Any]) -> dict[int, int]:
    """Row index -> the pid its counters name (0: a row no reply named)."""
    rows = {}
    for counters in run.get("counters") or ():
        if isinstance(counters, dict) and isinstance(counters.get("index"), int):
            pid = counters.get("pid")
            rows[counters["index"]] = pid if isinstance(pid, int) else 0
    return rows


def _width(run: dict[str, Any]) -> int:
    lengths = [len(run.get(key) or ()) for key in _PER_WORKER_COUNTS]
    return max([*lengths, max(_pids(run), default=-1) + 1])


def _rows_by(run: dict[str, Any]) -> str | None:
    """How the replies numbered `run`'s rows (core/protocol.py ROWS_BY_*); None: not recorded (a file before it)."""
    rows_by = run.get("evidence", {}).get("rows_by")
    return rows_by if rows_by in (ROWS_BY_INDEX, ROWS_BY_PID) else None


def _of_several_pids(run: dict[str, Any]) -> bool:
    """`run` is a merge whose rows were added by index from files that named other pids on them (keep_numbering)."""
    return run.get("evidence", {}).get("rows_of_several_pids") is True


def _unmatched(name: str, index: int, into: dict[str, Any], run: dict[str, Any]) -> str:
    """Why `run`'s rows cannot be placed among `into`'s (the files before it), which share no pid: one line."""
    whose = ((name, run), ("the files before it", into))
    unrecorded = [what for what, r in whose if _rows_by(r) is None]
    if unrecorded:
        why = (
            "a server known by its replies has its rows numbered by the worker index they name or, where they name "
            "a pid alone, in the order the pids first answered, and which of the two its replies used is not "
            f"recorded in {' nor in '.join(unrecorded)} (written before the tool kept it)"
        )
    else:
        by_pid = [what for what, r in whose if _rows_by(r) == ROWS_BY_PID]
        why = (
            f"the rows of {' and of '.join(by_pid)} are numbered by the pids the replies named (in the order they "
            "first answered), not by a worker index of the server's own"
        )
    return (
        f"{name} cannot be added worker by worker (run {index + 1}): {why}; the files share no worker's pid "
        "(another server, or one restarted), so which worker of one is which of the other cannot be told"
    )


def placement(into: dict[str, Any], run: dict[str, Any], name: str, index: int) -> dict[int, int] | None:
    """Where each row of `run` goes among `into`'s (index -> index, new rows past `into`'s last); None where
    they add index by index. ResultFileError where the rows of a server known by its replies are not its own
    indices (or not known to be) and the two runs name workers but share no pid: which worker of one is which
    of the other cannot be told."""
    mine, theirs = _pids(into), _pids(run)
    by_replies = bool({into["server"].get("server"), run["server"].get("server")} & _NUMBERED_BY_REPLIES)
    known = [{pid for pid in rows.values() if pid} for rows in (mine, theirs)]
    shared = known[0] & known[1]
    if not by_replies and known[0] != known[1]:
        # rows the tool or the process list numbers: one server's (attached twice, its pids listed in another
        # order) where the pids are the same, else two launches' (a pid met again after a wrap is no match)
        return None
    if by_replies and _rows_by(into) == _rows_by(run) == ROWS_BY_INDEX:
        return None  # both files' rows are the server's own worker indices: row i is its worker i in both
    several = [what for what, r in ((name, run), ("the files before it", into)) if _of_several_pids(r)]
    if by_replies and all(known) and several:
        # such a row names one of its pids: another's worker, found on no row, would take a row of its own
        raise ResultFileError(
            f"{name} cannot be added worker by worker (run {index + 1}): the rows of {several[0]} add several "
            "processes each (files added by the worker index their replies named, whose pids differed, each row "
            "naming the first's), and the other's rows are not numbered by that index, so which worker of one is "
            "which of the other cannot be told"
        )
    if not shared:
        if by_replies and all(known):  # a file no reply of which named a worker (all failed) has nothing to place
            raise ResultFileError(_unmatched(name, index, into, run))
        return None  # the tool's or the process list's numbering: the same index is the same place
    by_pid = {pid: row for row, pid in mine.items() if pid}
    placed = {row: by_pid[pid] for row, pid in theirs.items() if pid in by_pid}
    width = max(_width(into), max(placed.values(), default=-1) + 1)
    # a worker the first file never heard from takes a row no reply named there, else a new one; then each row
    # no reply named in this file (all zero) takes any row left
    for named in (True, False):
        taken = set(placed.values())
        free = [row for row in range(width) if row not in taken and not (named and mine.get(row))]
        for row in range(_width(run)):
            if row in placed or bool(theirs.get(row)) != named:
                continue
            placed[row] = free.pop(0) if free else width
            width = max(width, placed[row] + 1)
    if all(row == to for row, to in placed.items()):
        return None
    return placed


def _moved(values: list[Any], placed: dict[int, int], empty: Any) -> list[Any]:
    width = max([len(values), *(to + 1 for to in placed.values())])
    out = [copy.deepcopy(empty) for _ in range(width)]
    for row, value in enumerate(values):
        out[placed.get(row, row)] = value
    return out


def realigned(run: dict[str, Any], placed: dict[int, int]) -> dict[str, Any]:
    """A copy of `run` with its worker rows where `placed` puts them: every per-worker list (the server's closes
    too), the counters' and the affinity's indices (the counters keep their own pids: the witness's rows name
    them), each host's."""
    out = copy.deepcopy(run)
    for key in _PER_WORKER_COUNTS:
        if isinstance(out.get(key), list):
            out[key] = _moved(out[key], placed, 0)
    if isinstance(out.get("worker_histograms"), list):
        out["worker_histograms"] = _moved(out["worker_histograms"], placed, LatencyHistogram().to_dict())
    firsts = out.get("first_requests")  # the connections' first requests, per worker too (core/first_requests.py)
    if isinstance(firsts, dict) and isinstance(firsts.get("workers"), list):
        firsts["workers"] = _moved(firsts["workers"], placed, LatencyHistogram().to_dict())
    closes = out.get("server_closes")  # per worker: the kept connections the server ended (ServerCloses)
    for key in ("closed", "told"):
        if isinstance(closes, dict) and isinstance(closes.get(key), list):
            closes[key] = _moved(closes[key], placed, 0)
    for host in out.get("hosts") or ():
        if isinstance(host, dict) and isinstance(host.get("served"), list):
            host["served"] = _moved(host["served"], placed, 0)
    rows = [*(out.get("counters") or ()), *(out.get("evidence", {}).get("affinity") or ())]
    for row in rows:
        if isinstance(row, dict) and isinstance(row.get("index"), int):
            row["index"] = placed.get(row["index"], row["index"])
    return out


def widen(run: dict[str, Any]) -> None:
    """A server known by its replies kept with as many workers as its rows, once a worker new to the first file
    took a row past its last (as a file of one load keeps those that answered beyond -w: lifecycle.as_answered)."""
    if run["server"].get("server") in _NUMBERED_BY_REPLIES and _width(run) > run["server"].get("workers", 0):
        run["server"]["workers"] = _width(run)


def keep_numbering(into: dict[str, Any], run: dict[str, Any]) -> None:
    """Before `run` is added to `into`: the merged rows' rows_by. The same where both say the same; by pid where
    they differ (the rows were matched by pid, and a later file's must be too); not recorded where one does not
    say (a file from before it). A run no reply of which named a worker has no row to place and leaves `into`'s
    as it is, or gives way to `run`'s. rows_of_several_pids, once either has it or an index row met another pid."""
    named = [any(_pids(r).values()) for r in (into, run)]
    if not named[1]:
        return
    mine, theirs = _rows_by(into), _rows_by(run)
    if not named[0]:
        kept = theirs
    elif mine is None or theirs is None:
        kept = None
    else:
        kept = mine if mine == theirs else ROWS_BY_PID
    evidence = into.setdefault("evidence", {})
    pids = (_pids(into), _pids(run))
    if (
        _of_several_pids(into)
        or _of_several_pids(run)
        or (kept == ROWS_BY_INDEX and any(pids[0].get(row, pid) not in (0, pid) for row, pid in pids[1].items() if pid))
    ):
        evidence["rows_of_several_pids"] = True  # by index, a row now names one pid of several (placement)
    if kept is None:
        evidence.pop("rows_by", None)
    else:
        evidence["rows_by"] = kept
