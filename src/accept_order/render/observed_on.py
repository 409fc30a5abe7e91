"""--observe-on in a load's report: what observe saw on the server's host, set beside the load's own counts
(experiments/observe/remote.py `joined`). Where every worker's accepts equal the connections the replies
named it for, one line says so; where they differ (or observe could not count exactly) a row per worker shows
both. A failed observation is said in one line: the load's figures stand without it. A run of several loads
(a burst's sizes, a ramp's steps) has an observation per load: each is labelled with its load.

What comes from the server's host (the program's name, the failure's words) is escaped, as Text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ..core.text import escape_controls, plural


def observed_parts(evidence: Mapping[str, Any]) -> list[RenderableType]:
    """The parts for a run's `observed_on` evidence ([] when it has none)."""
    return load_parts(evidence.get("observed_on", ()))


def brought(observed: Sequence[Mapping[str, Any]]) -> bool:
    """Some observation came back with its counts (a failed one, said in one line, brought none)."""
    return any("error" not in seen for seen in observed)


def load_parts(observed: Sequence[Mapping[str, Any]], label: str = "") -> list[RenderableType]:
    """The parts for one load's observations (`observed_on` of a burst's cell or a ramp's step), each said as
    that load's: `label` (`100 clients`, `2000/s`) follows the host."""
    parts: list[RenderableType] = []
    for seen in observed:
        parts.extend(_one(seen, label))
    return parts


def _one(seen: Mapping[str, Any], label: str) -> list[RenderableType]:
    host = escape_controls(seen.get("host", "?")) + (f", {label}" if label else "")
    if "error" in seen:
        return [Text(f"observe on {host} failed: {escape_controls(seen['error'])}", style="yellow")]
    workers: Sequence[Mapping[str, Any]] = seen.get("workers", ())
    program = escape_controls(seen.get("program", ""))
    how = "counted by the kernel" if seen.get("traced") else "sampled, approximate"
    head = f"observe on {host} ({program}, {plural(len(workers), 'worker')}, accepts {how})"
    counters = _counters(seen.get("counters"), host)
    if seen.get("agrees"):
        total = sum(int(w.get("accepts") or 0) for w in workers)
        said = Text(f"{head}: each worker's accepts equal the connections its replies named ({total:,} in all)")
        return [said, *counters]
    table = Table(box=box.SIMPLE_HEAD, title=f"{head}: accepts beside the replies' counts", title_justify="left")
    for name in ("pid", "accepts", "by replies", "cpu ms", "bytes in", "bytes out"):
        table.add_column(name, justify="right")
    for w in workers:
        table.add_row(
            str(w.get("tid") or w.get("pid")),
            _n(w.get("accepts")),
            _n(w.get("served_by_replies")),
            "-" if w.get("cpu_s") is None else f"{1000 * float(w['cpu_s']):.1f}",
            _n(w.get("bytes_in")),
            _n(w.get("bytes_out")),
        )
    parts: list[RenderableType] = [table]
    if seen.get("agrees") is False and all(w.get("served_by_replies") is None for w in workers):
        # lighttpd's 'hi': nothing to set the accepts beside, not a difference (it blamed other clients)
        parts.append(Text("no reply named one of these workers: the accepts are all there is to go by"))
    elif seen.get("agrees") is False:
        parts.append(Text(_differ(workers, seen.get("lost_hosts") or (), int(seen.get("under_way") or 0))))
    return parts + counters


def _differ(workers: Sequence[Mapping[str, Any]], lost: Sequence[str], under_way: int) -> str:
    """Why the accepts and the replies' counts differ. Where the accepts exceed them: a client host lost mid-load
    (its connections accepted, its replies in no count) or a stop's connections in flight (accepted, perhaps, and
    never answered: at most that many); what neither explains came from elsewhere or was named for another."""
    excess = sum(int(w.get("accepts") or 0) - int(w.get("served_by_replies") or 0) for w in workers)
    reasons = []
    if lost:
        names = ", ".join(escape_controls(str(name)) for name in lost)
        host, was, it = ("host", "was", "it") if len(lost) == 1 else ("hosts", "were", "each")
        reasons.append(
            f"client {host} {names} {was} lost mid-load: what {it} drove was accepted here and left out of the "
            "replies' counts (the Lost line)"
        )
    if under_way:
        reasons.append(f"the load stopped with {under_way:,} under way, which the server may have accepted unanswered")
    if excess <= 0 or not reasons:
        return "the counts differ: connections came from elsewhere too, or replies named other workers"
    said = f"the counts differ: the kernel counted {excess:,} more accepts than the replies named; " + "; ".join(
        reasons
    )
    if lost:
        return said + "; connections from elsewhere would add to the accepts too"
    if excess > under_way:
        return said + f"; the other {excess - under_way:,} came from elsewhere, or replies named other workers"
    return said


def _counters(counters: Any, host: str) -> list[Text]:
    """The listen counters of the server's network namespace while observed (files before 0.3: none)."""
    if not isinstance(counters, Mapping):
        return []
    moved = {name: n for name, n in counters.items() if n}
    if not moved:
        return [Text(f"  on {host}: none of its {len(counters)} listen drop/overflow counters moved")]
    said = ", ".join(f"{escape_controls(str(name)).removeprefix('TcpExt')} {int(n):+d}" for name, n in moved.items())
    return [Text(f"  on {host}: {said} (the server's network namespace)", style="bold yellow")]


def _n(value: Any) -> str:
    return "-" if value is None else f"{int(value):,}"
