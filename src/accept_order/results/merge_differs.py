"""What parts two files' runs that merge refuses to add: every setting of the server or the load that differs, each
file's load read as it ran."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import ResultFileError
from ..core.limits import ran_at_once
from ..core.spec import NOT_STARTED, UNREAD_SETTINGS
from .envelope import FileKind
from .merge_rows import unfixed

FIRST = ("server", "mode")  # what the server is, named before its settings


def differs(a: dict[str, Any], b: dict[str, Any], ignored: Sequence[str]) -> str | None:
    """Every field that differs, what the server is first ("server 'builtin' vs 'haproxy', mode 'epoll' vs
    'threads', accept_batch 0 vs 64"); None where none does. A builtin epoll file beside a launched HAProxy's read
    'server accept_batch 0 vs 64' alone (the first key in order), as if the cap were all that parted them."""
    ignored = (*ignored, *_claimed(a, b))
    keys = sorted(set(a) | set(b), key=lambda k: (k not in FIRST, FIRST.index(k) if k in FIRST else 0, k))
    said = [f"{k} {a.get(k)!r} vs {b.get(k)!r}" for k in keys if k not in ignored and a.get(k) != b.get(k)]
    return ", ".join(said) or None


def _claimed(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, ...]:
    """Of a server this tool did not start (an attached one, a --target), the settings no file of it says the server
    had: an older file's were the tool's defaults (backlog 511, policy, ...), which a newer one leaves out; its
    listeners' backlogs read by one file only. Two client hosts' files of one attached server, an older and a newer,
    are one experiment; two that read different backlogs are not."""
    if not {a.get("server", a.get("kind")), b.get("server", b.get("kind"))} & set(NOT_STARTED):
        return ()
    return ("backlog", *UNREAD_SETTINGS) + (() if "backlogs" in a and "backlogs" in b else ("backlogs",))


def as_ran(
    documents: Sequence[tuple[str, str, dict[str, Any]]], kinds: Mapping[str, FileKind]
) -> list[tuple[str, str, dict[str, Any]]]:
    """The files (name, kind, document) with each mergeable run's load at the concurrency it ran at, as reading a file
    takes it (ConcurrentLoad): an older file kept -c as given beside fewer connections ('-n 20' saved 200, 20
    ran), so that it and a newer file of the same command read 'concurrency 20 vs 200', and two older ones merged
    into 40 connections beside 200, read back as 40 at once. The documents given are not changed."""
    out = []
    for name, kind, doc in documents:
        known = kinds.get(kind)
        if known is not None and known.mergeable and known.several and isinstance(doc.get("runs"), list):
            doc = {**doc, "runs": [_run_as_ran(run) for run in doc["runs"]]}
        elif known is not None and known.mergeable and not known.several:
            doc = _run_as_ran(doc)
        out.append((name, kind, doc))
    return out


# Server settings a file from before them lacks, as reading it takes them (ServerSpec's defaults): a merged file is
# written anew with them, so 'merge ab.json c.json' of three such files read 'in_flight 0 vs None' and was refused
UNSAID_SERVER = {"in_flight": 0}


def _run_as_ran(run: Any) -> Any:
    server = run.get("server") if isinstance(run, dict) else None
    if isinstance(server, dict) and any(name not in server for name in UNSAID_SERVER):
        run = {**run, "server": {**UNSAID_SERVER, **server}}
    load = run.get("load") if isinstance(run, dict) else None
    if not isinstance(load, dict) or "concurrency" not in load:
        return run
    ran = ran_at_once(load.get("connections"), load["concurrency"])
    return run if ran == load["concurrency"] else {**run, "load": {**load, "concurrency": ran}}


def backlogs_read(
    documents: Sequence[tuple[str, str, dict[str, Any]]], kinds: Mapping[str, FileKind]
) -> list[tuple[str, str, dict[str, Any]]]:
    """The files with each run of a server this tool did not start given the listeners' backlogs that the first file
    to read them saw, where its own file read none (one older than the reading, a listener read from /proc): each
    file is compared with the first alone, so 'old.json a.json b.json' (a read [64], b [128]) merged where 'a.json
    old.json b.json' was refused, and the merged file had a reading or none by the files' order. The server is the
    same (its pids are compared), so one file's reading is its. The documents given are not changed."""

    def runs(kind: str, doc: dict[str, Any]) -> list[Any]:
        known = kinds.get(kind)
        if known is None or not known.mergeable:
            return []
        return list(doc.get("runs") or []) if known.several else [doc]

    read: dict[int, Any] = {}  # a run's index -> its listeners' backlogs as the first file to read them saw
    for _, kind, doc in documents:
        for index, run in enumerate(runs(kind, doc)):
            if (backlogs := _server(run).get("backlogs")) is not None:
                read.setdefault(index, backlogs)
    out = []
    for name, kind, doc in documents:
        filled = [_with_backlogs(run, read.get(index)) for index, run in enumerate(runs(kind, doc))]
        if filled:
            doc = {**doc, "runs": filled} if kinds[kind].several else filled[0]
        out.append((name, kind, doc))
    return out


def _server(run: Any) -> dict[str, Any]:
    server = run.get("server") if isinstance(run, dict) else None
    return server if isinstance(server, dict) else {}


def _with_backlogs(run: Any, backlogs: Any) -> Any:
    server = _server(run)
    if backlogs is None or "backlogs" in server or server.get("server", server.get("kind")) not in NOT_STARTED:
        return run
    return {**run, "server": {**server, "backlogs": backlogs}}


_SERVER_IGNORED = ("port",)
# clients: merged (_add_clients); driver: what was asked for (auto), not what ran: the loops are compared instead
_LOAD_IGNORED = ("connections", "duration_s", "driver_procs", "clients", "driver")


def _amount(load: dict[str, Any]) -> str:
    """What a load's amount is: a number of connections or a time (the files' loads were checked whole)."""
    if load.get("connections") is not None:
        return f"{load['connections']} connections"
    return f"a {load.get('duration_s')} s duration"


def check_same(name: str, first: dict[str, Any], run: dict[str, Any], index: int) -> None:
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
