"""A server that is already running, that the tool did not start: attached by pid, never signalled.

PID is its master (the workers are its children, in the order they were started) or a list of worker
pids. Connections are attributed without the server's cooperation: while a connection is still open,
the worker whose fd table holds the server side of it is the one that accepted it (probes/owner.py); a
reply that names a worker ("worker PID") is used when there is one. Its workers are found by attached_workers.py,
and attached_listening.py checks that they alone hold the listener.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import NotServing, PlanError, WorkerExited
from ..core.kinds import ModeInfo, ServerKind
from ..core.processes import open_pidfd
from ..core.protocol import HTTP_KEEPALIVE, LINE, ClientProtocol
from ..core.spec import ATTACHED_KIND, ServerSpec
from ..core.started import Started
from ..core.waiting import wait_for
from .attached_epolls import loops as _loops  # light: it imports its probes where used
from .attached_listening import check_listening
from .attached_workers import listener_inodes, worker_pids
from .thread_switches import EveryThreadUsage
from .watched import UsageDeltas, gone, proc_state

# psutil, the socket owners, the listeners' probe and the attribution are imported where used: the registry
# lists this kind at start-up (issue 30)
if TYPE_CHECKING:
    from ..core.measures import WorkerCounters
    from ..core.target import Target
    from .attached_owners import OwnerAttribution

# the registry's `recognise`: the kind a running process is, by its name and command line (None: none known)
Recognise = Callable[[str, Sequence[str]], "ServerKind | None"]
SETTLE_TIMEOUT_S = 2.0
WHY = (
    "a server this tool did not start: its accept mechanism is whatever it was configured with, so the "
    "pattern is read from the records alone"
)


def _threads(pids: Sequence[int], listeners: set[int]) -> dict[str, Any]:
    """One worker process of several threads: its pid, name, first arguments, thread count and event loops (the
    registry judges at report time whether they are its workers); else nothing. Threads share their process's fd
    table, so the attribution (by fd table) is per process."""
    from ..probes.proc_waits import thread_ids
    from ..probes.serving import process_info

    if len(pids) != 1 or len(tids := thread_ids(pids[0])) < 2:
        return {}
    info = process_info(pids[0])
    name, argv = (info.name, list(info.argv[:3])) if info is not None else ("", [])
    loops, epolls = _loops(pids[0], listeners)
    return {"pid": pids[0], "program": name, "argv": argv, "count": len(tids), "loops": loops, "epolls": epolls}


def _program(attach: Sequence[int], pids: Sequence[int], recognise: Recognise) -> dict[str, Any]:
    """The program serving, named as inspect names a server (servers/registry.py `recognise` on the topmost process:
    the master where the pid attached is one, else the first worker), for what a report says in that server's terms
    (the latency model's words on a worker's pool of threads). {} where it ended before it was read."""
    from ..probes.serving import process_info

    top = attach[0] if attach and attach[0] not in pids else pids[0]
    info = process_info(top)
    if info is None:
        return {}
    kind = recognise(info.name, info.argv)
    return {"pid": top, "name": info.name, "recognised": kind.name if kind is not None else None}


class AttachedServer(Started):
    def __init__(self, spec: ServerSpec, helpers: Sequence[str], recognise: Recognise | None = None) -> None:
        self.spec = spec
        self.helper_titles = tuple(helpers)  # the kinds' helpers' (worker_pids)
        self.recognise = recognise  # the registry's, which names the program (_program); None: not recorded
        self._pids: list[int] = []
        self._pidfds: list[int] = []
        self._usage: UsageDeltas | None = None
        self._unsettled = 0
        self._attribution: OwnerAttribution | None = None
        self._started = 0.0
        self._threads: dict[str, Any] = {}  # one process of several threads: what the report says (threads_note)
        self._program: dict[str, Any] = {}  # the program serving, as inspect names it (_program)
        self._assumed: dict[str, Any] = {}  # listeners taken for dual-stack, their IPV6_V6ONLY unknown
        self._watched: dict[str, Any] = {}  # the listeners each worker's epolls watch: the model's queues
        self._listeners: set[int] = set()  # their inodes, to read the epolls again at the end (stop)

    @property
    def address(self) -> tuple[str, int]:
        return (self.spec.host, self.spec.port)

    @property
    def pids(self) -> list[int]:
        return self._pids

    @property
    def attribution(self) -> OwnerAttribution:
        if self._attribution is None:
            from .attached_owners import OwnerAttribution

            self._attribution = OwnerAttribution(tuple(self._pids))
        return self._attribution

    @property
    def protocol(self) -> ClientProtocol:
        return HTTP_KEEPALIVE if self.spec.protocol == "http" else LINE

    @property
    def unsettled(self) -> int:
        return self._unsettled

    def death_fds(self) -> list[int]:
        return list(self._pidfds)

    def start(self) -> None:
        """Attach: find the workers, watch them for exit. Nothing is started."""
        from ..probes.listeners import dual_stack_assumed, listening_sockets_of
        from .attached_epolls import watched

        spec = self.spec
        self._pids = worker_pids(spec.attach, spec.host, spec.port, helpers=self.helper_titles)
        check_listening(spec.host, spec.port, spec.attach, self._pids, helpers=self.helper_titles)  # the cause, first
        if len(self._pids) != self.spec.workers:
            raise NotServing(f"--attach: expected {self.spec.workers} workers, found {len(self._pids)}")
        listeners = self._listeners = listener_inodes(spec.host, spec.port, self._pids)
        self._threads, self._watched = _threads(self._pids, listeners), watched(self._pids, listeners)
        self._program = _program(spec.attach, self._pids, self.recognise) if self.recognise is not None else {}
        assumed = dual_stack_assumed(listening_sockets_of(spec.port, self._pids), spec.host)
        self._assumed = {"v6only_unknown": [f"[{r.address}]:{r.port}" for r in assumed]} if assumed else {}
        self._pidfds = [fd for fd in map(open_pidfd, self._pids) if fd is not None]
        self._usage = EveryThreadUsage(self._pids)  # 'sleeps': every thread's, not the main thread's alone
        self._started = time.monotonic()

    def check_alive(self) -> None:
        for index, pid in enumerate(self._pids):
            if gone(pid):
                after = round(time.monotonic() - self._started, 3)
                message = f"attached worker {index} (pid {pid}) exited {after:.2f} s into the run"
                raise WorkerExited(message, index, after)

    def settle(self) -> None:
        def asleep_or_gone() -> bool:
            # A worker that exited is never asleep again: say so now, not after the settle timeout.
            return all(proc_state(pid) in ("S", "X", "Z") for pid in self._pids)

        settled = wait_for(asleep_or_gone, SETTLE_TIMEOUT_S)
        self.check_alive()
        if not settled:
            self._unsettled += 1

    def stop(self) -> list[WorkerCounters]:
        """The workers' usage deltas. The server keeps running: it is not ours to stop."""
        from .attached_epolls import read_again

        counters = self._usage.counters() if self._usage is not None else []
        self._watched = read_again(self._watched, self._pids, self._listeners)  # young workers: still watching none?
        self.close()
        return counters

    def check_stopped(self) -> None:
        """Nothing to check: the attached server goes on running."""

    def own_evidence(self) -> dict[str, Any]:
        # not ours to read its logs; one process of several threads is said (kind_notes.threads_note), and a listener
        # taken for dual-stack with its IPV6_V6ONLY unknown (experiments/attached_listeners.py), and the listeners
        # each worker waits on (experiments/latency/model_queues.py), and the program serving (_program)
        program = {"program": self._program} if self._program else {}
        return ({"threads": self._threads} if self._threads else {}) | self._assumed | self._watched | program

    def close(self) -> None:
        for fd in self._pidfds:
            os.close(fd)
        self._pidfds = []
        if self._attribution is not None:
            self._attribution.close()


class AttachedKind(ServerKind):
    name = ATTACHED_KIND  # core/spec.py spells it: a spec of it holds no backlog of the tool's
    mode_name = ATTACHED_KIND  # its one mode
    summary = "a running server this tool did not start, attached by pid"
    launched = False
    sleeps = "every thread of each worker process"  # EveryThreadUsage; a thread attached as a worker: its own

    def __init__(self, helpers: Sequence[str], recognise: Recognise) -> None:
        """`helpers`: the titles every other kind gives its helpers (ServerKind.helpers), which the registry, that
        imports them all, passes in: a master's children so titled are not its workers; `recognise`: the registry's
        naming of a running program's kind, as inspect names it."""
        self.helper_titles = tuple(helpers)  # not `helpers`: that is the class's own, none (ServerKind.helpers)
        self.recognise = recognise

    def label(self, spec: ServerSpec) -> str:
        return f"attached pid {','.join(map(str, spec.attach))}"

    def modes(self) -> dict[str, ModeInfo]:
        return {self.mode_name: ModeInfo(self.mode_name, self.summary, WHY, None, "unknown")}

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if not spec.attach or spec.port == 0:
            raise PlanError("--attach needs the server's pid (or its workers' pids) and its --port")
        if spec.protocol not in ("line", "http"):
            raise PlanError(f"--protocol is line or http, got {spec.protocol!r}")

    def as_found(self, spec: ServerSpec) -> ServerSpec:
        from .attached_backlogs import read_into  # its listeners' backlogs as the kernel has them, where it holds none

        return read_into(spec)

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return AttachedServer(spec, self.helper_titles, self.recognise)
