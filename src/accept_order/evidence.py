"""The kernel's own evidence about a run: listeners and their queues, drop counters, affinities.

`EvidenceCapture` is driven by whoever owns the workers (api.run_plan, the latency and herd runs):

    capture = EvidenceCapture()
    capture.before()                        # netstat counters, before any worker exists
    with WorkerPool(plan) as pool:
        capture.listeners(pool.port, "start")
        ... drive ...
        evidence = capture.after(pool.port, pool.pids)   # "end" listeners, affinities, deltas
        counters = pool.stop()

`after()` returns a plain JSON-able dict (stored as RunResult.evidence); the renderers at the end of
this module turn that dict back into text, so a saved result shows the same evidence.

Counter deltas are per network namespace: the dict says whether the run had one to itself.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import psutil
from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from . import kernel
from .kernel import ListenerRow

__all__ = [
    "EvidenceCapture",
    "PRIVATE_NAMESPACE_NOTE",
    "PRIVATE_ENV",
    "netns_privacy",
    "evidence_report",
    "listener_table",
    "counters_text",
    "affinity_text",
    "short_counter",
    "SHARED_SHORT",
    "PRIVATE_SHORT",
]

PRIVATE_NAMESPACE_NOTE = "counters are from a private network namespace: only this run's traffic is in them"

#: Set to 1 by whoever made a network namespace for this run (e.g. `unshare -n`). Needed because
#: comparing with PID 1's namespace (kernel.in_private_netns) is not always allowed, even for root:
#: /proc/1/ns/net may be unreadable (seen in a Firecracker guest), and then it answers False.
PRIVATE_ENV = "ACCEPT_ORDER_PRIVATE_NETNS"


def netns_privacy() -> tuple[bool, str]:
    """(private, how it was decided) for this process's network namespace."""
    if kernel.in_private_netns():
        return True, "differs from PID 1's network namespace"
    if os.environ.get(PRIVATE_ENV) == "1":
        return True, f"declared by {PRIVATE_ENV}=1"
    return False, "not known to be private"


def netns_inode() -> int | None:
    try:
        return os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return None


def _normal_address(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return address


def _row_dict(row: ListenerRow) -> dict[str, Any]:
    return asdict(row)


class EvidenceCapture:
    """Collects the kernel's view of one run. Readers are injectable for tests.

    ``private``: True when the caller knows the run has a network namespace to itself (it made one);
    None (default) asks :func:`netns_privacy`. ``host``: keep only listeners bound to this address
    (or to the wildcard), so another program listening on the same port number elsewhere is left out.
    """

    def __init__(
        self,
        read_counters: Callable[[], Mapping[str, int]] = kernel.read_netstat,
        list_listeners: Callable[[int], list[ListenerRow]] = kernel.listening_sockets,
        read_affinity: Callable[[int], list[int]] = kernel.affinity,
        private: bool | None = None,
        names: Sequence[str] = kernel.WATCHED_COUNTERS,
        host: str | None = None,
    ) -> None:
        self._host = _normal_address(host) if host else None
        self._read_counters = read_counters
        self._list_listeners = list_listeners
        self._read_affinity = read_affinity
        self._private = private
        self._names = tuple(names)
        self._before: Mapping[str, int] | None = None
        self._listeners: dict[str, list[dict[str, Any]]] = {}
        self._errors: list[str] = []
        self._affinity: list[dict[str, Any]] = []

    # -- capture --------------------------------------------------------------------------------
    def before(self) -> None:
        """Read the counters; call before the workers start so their listen() is inside the window."""
        self._before = self._counters("before")

    def listeners(self, port: int, label: str) -> list[ListenerRow]:
        """Snapshot the listening sockets of ``port`` under ``label`` (e.g. "start", "end")."""
        try:
            rows = self._list_listeners(port) if port else []
        except (OSError, ValueError) as exc:
            self._errors.append(f"listeners at {label}: {exc}")
            rows = []
        if self._host is not None:
            rows = [r for r in rows if _normal_address(r.address) in (self._host, "0.0.0.0", "::")]
        self._listeners[label] = [_row_dict(r) for r in rows]
        return rows

    def workers(self, pids: Sequence[int]) -> list[dict[str, Any]]:
        """Read each worker's CPU affinity now (while it runs); :meth:`after` reports these unless it
        is given pids of its own. For callers that can only finish after the workers stopped."""
        self._affinity = []
        for index, pid in enumerate(pids):
            try:
                cpus: list[int] | None = self._read_affinity(pid)
            except (psutil.Error, OSError):
                cpus = None  # the worker is gone; its own report (WorkerCounters.affinity) remains
            self._affinity.append({"index": index, "pid": pid, "cpus": cpus})
        return self._affinity

    def after(self, port: int = 0, pids: Sequence[int] = ()) -> dict[str, Any]:
        """Finish: an "end" listener snapshot (if ``port`` and none yet), the workers' affinities
        (read now if ``pids`` are given, so call it while they are alive; else those read by
        :meth:`workers`), and the counter deltas since :meth:`before`."""
        if port and "end" not in self._listeners:
            self.listeners(port, "end")
        affinity = self.workers(pids) if pids else self._affinity
        after = self._counters("after")
        available = bool(self._before) and bool(after)
        deltas = kernel.counter_deltas(self._before or {}, after, self._names) if available else {}
        if self._private is None:
            private, why = netns_privacy()
        else:
            private, why = self._private, "declared by the caller"
        return {
            "listeners": dict(self._listeners),
            "counters": {name: value for name, value in deltas.items() if value},
            "counters_watched": [n for n in self._names if n in deltas],
            "counters_available": available,
            "affinity": [dict(a) for a in affinity],
            "shared_namespace": not private,
            "netns": {"inode": netns_inode(), "private": private, "why": why},
            "note": PRIVATE_NAMESPACE_NOTE if private else kernel.SHARED_NAMESPACE_NOTE,
            "errors": list(self._errors),
        }

    def _counters(self, when: str) -> Mapping[str, int]:
        try:
            return self._read_counters()
        except (OSError, ValueError) as exc:
            self._errors.append(f"counters {when}: {exc}")
            return {}


# ------------------------------------------------------------------------------------------------
# Pure renderers over the dict `after()` returns (also as loaded from a result file)
# ------------------------------------------------------------------------------------------------


def short_counter(name: str) -> str:
    """TcpExtListenOverflows -> ListenOverflows (the nstat prefix adds nothing on screen)."""
    return name.removeprefix("TcpExt")


def _endpoint(row: Mapping[str, Any]) -> str:
    address = str(row.get("address", "?"))
    if ":" in address:
        address = f"[{address}]"
    return f"{address}:{row.get('port', '?')}"


def listener_table(rows: Sequence[Mapping[str, Any]], title: str | None = None) -> Table:
    """Listening sockets the way `ss -ltn` prints them: Recv-Q is the accept queue now, Send-Q its limit."""
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    for name in ("State", "Recv-Q", "Send-Q", "Local Address:Port", "inode"):
        table.add_column(name, justify="right" if name.endswith("-Q") or name == "inode" else "left")
    for row in rows:
        backlog = row.get("backlog")
        table.add_row(
            "LISTEN",
            str(row.get("queue", "?")),
            "-" if backlog is None else str(backlog),
            _endpoint(row),
            str(row.get("inode", "?")),
        )
    return table


def _listeners_line(label: str, rows: Sequence[Mapping[str, Any]]) -> Text:
    if not rows:
        return Text(f"  listeners ({label}): none found")
    kind = "one shared accept queue" if len(rows) == 1 else f"{len(rows)} accept queues (one per socket)"
    queues = " ".join(str(r.get("queue", "?")) for r in rows)
    limits = {r.get("backlog") for r in rows}
    limit = "?" if limits == {None} else "/".join(str(b) for b in sorted(x for x in limits if x is not None))
    source = rows[0].get("source", "netlink")
    where = f"  listeners ({label}): {_endpoint(rows[0])}, {kind}"
    return Text(f"{where}; Recv-Q {queues}, Send-Q {limit} (from {source})")


SHARED_SHORT = "shared network namespace: may include other TCP traffic on this host"
PRIVATE_SHORT = "private network namespace: this run's traffic only"


def counters_text(evidence: Mapping[str, Any]) -> Text:
    """Non-zero counter deltas and whose they are (private or shared namespace)."""
    if not evidence.get("counters_available", False):
        return Text("  kernel counters: not available (no /proc/net/netstat)", style="dim")
    counters: Mapping[str, int] = evidence.get("counters", {})
    shared = evidence.get("shared_namespace", True)
    text = Text("  kernel counters: ")
    if counters:
        text.append(", ".join(f"{short_counter(n)} {v:+d}" for n, v in counters.items()), style="bold yellow")
    else:
        watched = len(evidence.get("counters_watched", []))
        text.append(f"none of {watched} drop/overflow counters moved")
    if shared:
        text.append(f" ({SHARED_SHORT})", style="yellow")
    else:
        why = evidence.get("netns", {}).get("why")
        text.append(f" ({PRIVATE_SHORT}{'; ' + why if why else ''})", style="dim")
    return text


def affinity_text(affinity: Iterable[Mapping[str, Any]]) -> Text | None:
    entries = list(affinity)
    if not entries:
        return None
    shown = ["?" if e.get("cpus") is None else (kernel.format_cpu_list(e["cpus"]) or "?") for e in entries]
    if len(set(shown)) == 1:
        who = "the worker" if len(entries) == 1 else f"all {len(entries)} workers"
        return Text(f"  affinity: {who} on CPUs {shown[0]}")
    return Text(
        "  affinity: "
        + ", ".join(f"worker {e.get('index')} {s}" for e, s in zip(entries, shown, strict=True))
    )


def evidence_report(evidence: Mapping[str, Any], detail: bool = False) -> RenderableType:
    """Compact view of the evidence: one line per listener snapshot, the counters, the affinities.
    ``detail`` adds ss-like tables of every listener snapshot."""
    if not evidence:
        return Text("")
    parts: list[RenderableType] = [Text("Kernel evidence", style="bold")]
    listeners: Mapping[str, Sequence[Mapping[str, Any]]] = evidence.get("listeners", {})
    for label, rows in listeners.items():
        parts.append(_listeners_line(label, rows))
        if detail and rows:
            parts.append(listener_table(rows))
    parts.append(counters_text(evidence))
    affinity = affinity_text(evidence.get("affinity", []))
    if affinity is not None:
        parts.append(affinity)
    for error in evidence.get("errors", []):
        parts.append(Text(f"  could not read {error}", style="yellow"))
    return Group(*parts)
