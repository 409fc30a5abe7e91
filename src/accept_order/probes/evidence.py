"""The kernel's own evidence about a run: listeners and their queues, drop counters, affinities.

`EvidenceCapture` is driven by the lifecycle (experiments/lifecycle.py), the one owner of every run:

    capture = EvidenceCapture()
    capture.before()                        # netstat counters, before any worker exists
    target.start()
    capture.listeners(port, "start")
    ... load ...
    evidence = capture.after(port, pids)    # "end" listeners, affinities, deltas
    counters = target.stop()

`after()` returns a plain JSON-able dict (stored as the result's evidence); render/evidence.py turns that
dict back into text, so a saved result shows the same evidence.

Counter deltas are per network namespace: the dict says whether the run had one to itself.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..core.cpus import affinity
from ..core.measures import ListenerRow
from ..core.processes import process_errors
from . import netstat
from .cpu_waits import Times, thread_times, waited
from .listen_drops import DropsReading, dropped_between
from .listeners import drops_reading, listening_sockets_of, serving_on

if TYPE_CHECKING:  # imported where the looks start: a run of the built-in workers never looks (nor loads proc_waits)
    from .busy_waits import BusySampler

__all__ = ["EvidenceCapture", "PRIVATE_ENV", "PRIVATE_NAMESPACE_NOTE", "netns_privacy"]

PRIVATE_NAMESPACE_NOTE = "counters are from a private network namespace: only this run's traffic is in them"

#: Set to 1 by whoever made a network namespace for this run (e.g. `unshare -n`). Needed because
#: comparing with PID 1's namespace (kernel.in_private_netns) is not always allowed, even for root:
#: /proc/1/ns/net may be unreadable (seen in a Firecracker guest), and then it answers False.
PRIVATE_ENV = "ACCEPT_ORDER_PRIVATE_NETNS"


def netns_privacy() -> tuple[bool, str]:
    """(private, how it was decided) for this process's network namespace."""
    if netstat.in_private_netns():
        return True, "differs from PID 1's network namespace"
    if os.environ.get(PRIVATE_ENV) == "1":
        return True, f"declared by {PRIVATE_ENV}=1"
    return False, "not known to be private"


def netns_inode() -> int | None:
    try:
        return os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return None


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
        read_counters: Callable[[], Mapping[str, int]] = netstat.read_netstat,
        list_listeners: Callable[[int, Sequence[int]], list[ListenerRow]] = listening_sockets_of,
        read_affinity: Callable[[int], list[int]] = affinity,
        private: bool | None = None,
        names: Sequence[str] = netstat.WATCHED_COUNTERS,
        host: str | None = None,
        read_drops: Callable[[int, str | None, Sequence[int]], int | DropsReading | None] = drops_reading,
        read_counters_of: Callable[[int], Mapping[str, int]] | None = None,
        look_busy: bool = False,
    ) -> None:
        # where a server's service time is not timed by its workers: how long each was busy (probes/busy_waits.py)
        self._look_busy = look_busy
        self._busy: BusySampler | None = None
        self._read_counters_of = read_counters_of  # a pid's namespace's counters (None: server_netns.netstat_of)
        self._server_pid: int | None = None  # the counters are this process's namespace's, not ours
        self._unread: str | None = None  # why the server's namespace's counters were not read
        self._server_inode: int | None = None
        self._ours: tuple[Mapping[str, int] | None, Callable[[], Mapping[str, int]]] | None = None  # before read_in
        self._host = host or None
        self._read_drops = read_drops
        self._drops: dict[str, int | DropsReading | None] = {}  # the listeners' own drops so far, by snapshot label
        self._read_counters = read_counters
        self._list_listeners = list_listeners
        self._read_affinity = read_affinity
        self._private = private
        self._names = tuple(names)
        self._before: Mapping[str, int] | None = None
        self._listeners: dict[str, list[dict[str, Any]]] = {}
        self._errors: list[str] = []
        self._affinity: list[dict[str, Any]] = []
        self._times: Times = {}  # the server's threads' schedstat as it started (cpu_waits.py)

    # -- capture --------------------------------------------------------------------------------
    def before(self) -> None:
        """Read the counters; call before the workers start so their listen() is inside the window."""
        self._before = self._counters("before")

    def started(self, port: int, pids: Sequence[int]) -> None:
        """Once the server listens: its listeners at "start"; and where its processes (`pids`) are in a network
        namespace other than ours, as an attached server's may be, the counters read from there from now on: ours
        would be another namespace's (a server launched here is in ours, and its counters were read before it)."""
        rows = self.listeners(port, "start", pids)
        self._times = thread_times(pids)
        if self._look_busy and pids:
            from .busy_waits import BusySampler
            from .held_connections import HeldConnections

            inodes = frozenset(row.inode for row in rows)
            families = tuple({socket.AF_INET6 if row.family == "ipv6" else socket.AF_INET for row in rows})
            self._busy = BusySampler(pids, listeners=inodes, held=HeldConnections(port, inodes, families))
            self._busy.start()
        from .server_netns import namespace_of, netstat_in, netstat_namespace, netstat_of

        # a process gone meanwhile (or no procfs) says nothing of where the server is
        where = {pid: ns for pid in pids if (ns := netstat_namespace(pid)) is not None}
        namespaces = set(where.values())
        if not namespaces or namespaces == {netstat_namespace("self")}:
            return
        if len(namespaces) > 1:
            self._unread = f"the server's processes are in {len(namespaces)} network namespaces"
            return
        pid = self._server_pid = next(iter(where))
        self._server_inode = namespace_of(pid)  # None where PID is not ours to trace (its netstat still is to read)
        read_of, namespace = self._read_counters_of or netstat_of, next(iter(namespaces))
        # through whichever of its processes is still there: a worker may exit before the end's reading
        self._read_counters = lambda: netstat_in(namespace, list(where), read_of)
        self._before = self._counters("before")  # no load yet: the server was running before it
        if not self._before:
            self._unread = f"/proc/{pid}/net/netstat could not be read: {self._errors[-1] if self._errors else '?'}"

    def read_in(self, read: Callable[[], Mapping[str, int]], pid: int) -> None:
        """The counters read by `read` from now on: a --target's network namespace on this machine (not ours), through
        its process `pid` (servers/remote.py counters_reader). Before the load: the window is the load's."""
        from .server_netns import namespace_of

        self._ours = (self._before, self._read_counters)
        self._server_pid, self._server_inode, self._read_counters = pid, namespace_of(pid), read
        self._before = self._counters("before")
        if not self._before:
            self._unread = f"/proc/{pid}/net/netstat could not be read: {self._errors[-1] if self._errors else '?'}"

    def back_to_ours(self) -> None:
        """Ours again, read since before(), in place of read_in's: the load went from client hosts, whose
        coordinator's counters are said as such (a --target's namespace read there would be said as this host's)."""
        if self._ours is not None:
            (self._before, self._read_counters), self._ours = self._ours, None
            self._server_pid = self._server_inode = None
            self._unread = None

    def not_read(self, why: str) -> None:
        """The server's counters could not be read (a --target elsewhere): ours, the client's, are not shown."""
        self._unread = why

    def listeners(self, port: int, label: str, pids: Sequence[int] = ()) -> list[ListenerRow]:
        """Snapshot the listening sockets of ``port`` under ``label`` (e.g. "start", "end"), and their drops, in the
        network namespace of ``pids`` (the server's processes; ours without them): an attached server in a namespace
        of its own listens there, and a listener on its port in ours is another program's."""
        try:
            rows = self._list_listeners(port, pids) if port else []
        except (OSError, ValueError) as exc:
            self._errors.append(f"listeners at {label}: {exc}")
            rows = []
        rows = serving_on(rows, self._host)
        self._listeners[label] = [_row_dict(r) for r in rows]
        self._drops[label] = self._read_drops(port, self._host, pids) if port else None
        return rows

    def workers(self, pids: Sequence[int]) -> list[dict[str, Any]]:
        """Read each worker's CPU affinity now (while it runs); :meth:`after` reports these unless it
        is given pids of its own. For callers that can only finish after the workers stopped."""
        self._affinity = []
        for index, pid in enumerate(pids):
            try:
                cpus: list[int] | None = self._read_affinity(pid)
            except process_errors():
                cpus = None  # the worker is gone; its own report (WorkerCounters.affinity) remains
            self._affinity.append({"index": index, "pid": pid, "cpus": cpus})
        return self._affinity

    def after(self, port: int = 0, pids: Sequence[int] = ()) -> dict[str, Any]:
        """Finish: an "end" listener snapshot (if ``port`` and none yet), the workers' affinities
        (read now if ``pids`` are given, so call it while they are alive; else those read by
        :meth:`workers`), and the counter deltas since :meth:`before`."""
        if port and "end" not in self._listeners:
            self.listeners(port, "end", pids)
        affinity = self.workers(pids) if pids else self._affinity
        after = self._counters("after")
        if self._server_pid is not None and not after and self._unread is None:  # not 'no /proc/net/netstat'
            error = self._errors[-1].removeprefix("counters after: ") if self._errors else "none read"
            self._unread = f"the server's counters could not be read at the end: {error}"
        available = bool(self._before) and bool(after) and self._unread is None
        deltas = netstat.counter_deltas(self._before or {}, after, self._names) if available else {}
        inode = netns_inode()
        if self._server_pid is not None or self._unread is not None:  # not known to be the run's alone
            inode, private, why = self._server_inode, False, "the server's processes' namespace, not this tool's"
        elif self._private is None:
            private, why = netns_privacy()
        else:
            private, why = self._private, "declared by the caller"
        # whose namespace's counters these are, where not ours; or why the server's were not read (ours not shown)
        elsewhere: dict[str, Any] = {} if self._server_pid is None else {"counters_pid": self._server_pid}
        elsewhere.update({} if self._unread is None else {"counters_unread": self._unread})
        # the server's own listeners' drops between the snapshots (sk_drops), where ListenOverflows is the namespace's
        between = dropped_between(self._drops.get("start"), self._drops.get("end"))
        dropped = {} if between is None else {"listener_drops": between}
        # how long the server's threads waited for a CPU while runnable, beside how long they ran (cpu_waits.py)
        waits = waited(self._times, thread_times(pids)) if pids and self._times else None
        busy = self.stop_looking()
        return {
            **dropped,
            **({} if waits is None else {"cpu_waits": waits}),
            **({} if busy is None else {"busy_waits": busy}),
            **elsewhere,
            "listeners": dict(self._listeners),
            "counters": {name: value for name, value in deltas.items() if value},
            "counters_watched": [n for n in self._names if n in deltas],
            "counters_available": available,
            "affinity": [dict(a) for a in affinity],
            "shared_namespace": not private,
            "netns": {"inode": inode, "private": private, "why": why},
            "note": PRIVATE_NAMESPACE_NOTE if private else netstat.SHARED_NAMESPACE_NOTE,
            "errors": list(self._errors),
        }

    def stop_looking(self) -> dict[str, Any] | None:
        """End the workers' busy looks (after() does; a run that fails before it, its lifecycle's end) and what
        they read."""
        busy, self._busy = self._busy, None
        return None if busy is None else busy.stop()

    def _counters(self, when: str) -> Mapping[str, int]:
        try:
            return self._read_counters()
        except (OSError, ValueError) as exc:
            self._errors.append(f"counters {when}: {exc}")
            return {}
