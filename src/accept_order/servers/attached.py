"""A server that is already running, that the tool did not start: attached by pid, never signalled.

PID is its master (the workers are its children, in the order they were started) or a list of worker
pids. Connections are attributed without the server's cooperation: while a connection is still open,
the worker whose fd table holds the server side of it is the one that accepted it (probes/owner.py); a
reply that names a worker ("worker PID") is used when there is one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.capabilities import SERVERS_USER, what_would_let_it
from ..core.errors import NotServing, PlanError, WorkerExited
from ..core.kinds import ModeInfo, ServerKind
from ..core.processes import open_pidfd
from ..core.protocol import HTTP_KEEPALIVE, LINE, ClientProtocol
from ..core.spec import ATTACHED_KIND, ServerSpec
from ..core.started import Started
from ..core.waiting import wait_for
from .attached_epolls import loops as _loops  # light: it imports its probes where used
from .thread_switches import EveryThreadUsage
from .watched import UsageDeltas, gone, proc_state

# psutil, the socket owners, the listeners' probe and the attribution are imported where used: the registry
# lists this kind at start-up (issue 30)
if TYPE_CHECKING:
    from ..core.measures import WorkerCounters
    from ..core.target import Target
    from .attached_owners import OwnerAttribution

SETTLE_TIMEOUT_S = 2.0
WHY = (
    "a server this tool did not start: its accept mechanism is whatever it was configured with, so the "
    "pattern is read from the records alone"
)


def worker_pids(
    attach: Sequence[int], host: str | None = None, port: int | None = None, *, helpers: Sequence[str]
) -> list[int]:
    """One pid: its children that serve, oldest first (a master and its workers), itself first where it accepts
    beside them (uWSGI without --master: its worker 1), or itself if none does; several pids: those, as given.
    NotServing for a pid no process has (PlanError: none can). `helpers`: registry.HELPERS (the registry imports us).

    A master's children are not all workers: nginx's cache manager and loader, h2o's backtrace annotator, the
    resource tracker of a Python supervisor serve nothing. A worker holds the listener on host:port, or, where the
    master holds it alone (Node's primary under SCHED_RR), is fed connections by it over a Unix socketpair; and no
    kind names it a helper of its own by its title (`nginx: cache manager process`: ServerKind.helpers).

    A master still starting (it holds the listener before its workers take it) is waited for, at most
    attached_start.STARTING_S: read at once, it was its own one worker (attached_start.py)."""
    import psutil

    from ..probes.serving import PID_LIMIT
    from .attached_start import settled_workers

    try:
        if len(attach) == 1:
            master = psutil.Process(attach[0]).pid
            titles = tuple(helpers)

            def read(children: list[int]) -> tuple[list[int], bool, set[int]]:
                return _serving(master, children, host, port, titles)

            return settled_workers(master, read, lambda pid: _named_helper(pid, titles)) or [master]
        for pid in attach:
            psutil.Process(pid)
        return list(attach)
    except psutil.NoSuchProcess as exc:  # a number no pid can be is usage (2); one not running now, the machine's (1)
        raise (PlanError if not 0 < exc.pid <= PID_LIMIT else NotServing)(f"--attach: no process {exc.pid}") from None
    except psutil.AccessDenied as exc:  # as observe's and inspect's (probes/serving.find_server)
        raise NotServing(f"--attach: not allowed to look at process {exc.pid}") from None


def _serving(
    master: int, children: list[int], host: str | None, port: int | None, helpers: tuple[str, ...]
) -> tuple[list[int], bool, set[int]]:
    """Of a master's children, those that take its connections (see worker_pids); all of them but the named
    helpers where no port is known to tell by. With whether the master holds the listener, and the children that
    hold it or are fed by the master (whatever they are: attached_start.py waits for the others)."""
    from ..probes.accept_waits import FORKS, SERVES
    from ..probes.owner import socket_holders
    from ..probes.serving import process_info

    def worker(pid: int) -> bool:
        return process_info(pid) is not None and not _named_helper(pid, helpers)

    if host is None or not port:
        return [pid for pid in children if worker(pid)], False, set(children)
    holders = socket_holders(_listener_inodes(host, port, [master, *children]), [master, *children])
    if not holders:  # none holds it: check_listening says so of the master and its children
        return [pid for pid in children if worker(pid)], False, set()
    held = [pid for pid in children if pid in holders]
    role = _parent_accepts(master, held, holders) if held and master in holders else None
    if role == FORKS:
        return [], True, set(held)  # the master accepts; its children serve a connection each (worker_pids: it)
    if role == SERVES:  # a worker beside its children (uWSGI without --master): the oldest of them
        return [master, *(pid for pid in held if worker(pid))], True, set(held)
    # who the master feeds is a scan of every process's fd table (2.4 s, 0.6 CPU-s here beside 400 processes): asked
    # only where it can matter, where no child holds the listener or a young one does not yet (attached_start)
    unheld = [pid for pid in children if pid not in holders]
    asked = master in holders and (not held or any(_young(pid) for pid in unheld))
    fed = _fed(master) if asked else frozenset()
    engaged = set(held) | (set(children) & fed)
    if held or master not in holders:
        return [pid for pid in held if worker(pid)], master in holders, engaged
    return [pid for pid in children if pid in fed and worker(pid)], True, engaged


def _young(pid: int) -> bool:
    from .attached_start import STARTING_S, age_s

    return (age_s(pid) or STARTING_S) < STARTING_S


def _parent_accepts(master: int, children: Sequence[int], holders: dict[int, set[int]]) -> str | None:
    """How the master takes connections beside its children that hold its listener: FORKS (a child per connection),
    SERVES (a worker beside them), or None (it does not: nginx's, gunicorn's master). probes/accept_waits.py."""
    from ..probes.accept_waits import parent_accepts

    return parent_accepts(master, children, holders[master])


def _named_helper(pid: int, helpers: tuple[str, ...]) -> bool:
    """A child whose title (its command line, which nginx rewrites) starts with one of `helpers` (nginx's cache
    manager): it may hold the listener and is no worker. Another child that holds it is one, though it was not
    found among them (it took the listener after they were read: a master's workers starting) and
    check_listening refuses it."""
    from ..probes.serving import process_info

    info = process_info(pid)
    return info is not None and " ".join(info.argv).startswith(helpers)


def _fed(master: int) -> frozenset[int]:
    """The processes a master that alone holds its listeners talks to over Unix socketpairs (inspect's reading of
    an acceptor's workers: probes/serving.py); none where it cannot be read."""
    from ..probes.serving import find_server

    try:
        return find_server(master).fed
    except (NotServing, PlanError, OSError):
        return frozenset()


def _listener_inodes(host: str, port: int, pids: Sequence[int]) -> set[int]:
    """The listening sockets on `port` (in the namespaces of `pids`) that connections made to `host` go to."""
    from ..probes.listeners import listening_sockets_of, serving_on

    return {row.inode for row in serving_on(listening_sockets_of(port, pids), host)}


def _name(pid: int) -> str:
    """`pid 7 (nginx)`: the command name from /proc, as ps shows it."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f"pid {pid} ({f.read().strip()})"
    except OSError:
        return f"pid {pid}"


def _parent(pid: int) -> int | None:
    import psutil

    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None


def _readable(pid: int) -> bool:
    """Whether this user may read pid's fd links (one gone hides nothing). Listing them is not enough: root
    without CAP_SYS_PTRACE lists another user's and may read none."""
    from ..probes.fd_table import read_links

    return read_links(pid) is not None


def _names(pids: Sequence[int], shown: int = 3) -> str:
    named = [_name(pid) for pid in pids[:shown]]
    more = f" and {len(pids) - shown} more" if len(pids) > shown else ""
    return ", ".join(named) + more


def _held_by(holders: dict[int, set[int]]) -> str:
    """Who holds the listener, top of each process tree first: `pid 7 (nginx) and 3 of its children`."""
    roots = [pid for pid in sorted(holders) if _parent(pid) not in holders]
    if len(roots) == 1:
        children = len(holders) - 1
        return f"{_name(roots[0])}" + (f" and {children} of its children" if children else "")
    return _names(roots) + f" ({len(holders)} processes in all)"


def check_listening(
    host: str, port: int, attach: Sequence[int], workers: Sequence[int], *, helpers: Sequence[str]
) -> None:
    """NotServing unless the attached processes hold a listener that takes connections to host:port, and
    no process outside them (their parent, a master that only listens, aside) holds one too: otherwise
    the connections would go to someone else and every count and verdict would be invented. Exit 1, as observe's
    refusal of such a pid: what the machine turned out to be. `helpers`: as worker_pids's."""
    from ..probes.accept_waits import FORKS
    from ..probes.listeners import listening_sockets_of, serving_on
    from ..probes.owner import socket_holders

    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    # the listeners connections to host go to: a wildcard beside one bound to host gets none (serving_on)
    rows = serving_on(listening_sockets_of(port, [*attach, *workers]), host)
    holders = socket_holders({row.inode for row in rows})
    attached = set(attach) | set(workers)
    if len(attach) == 1 and list(workers) != [attach[0]]:
        children = "child" if len(workers) == 1 else "children"
        who, plural = f"{_name(attach[0])} and its {len(workers)} {children}", True
    else:
        who, plural = _names(attach), len(attach) > 1
    if not attached & holders.keys():
        hidden = sorted(pid for pid in attached if not _readable(pid))
        if rows and hidden:
            raise NotServing(
                f"--attach: cannot tell whether {_names(hidden)} {'holds' if len(hidden) == 1 else 'hold'} the "
                f"listener on {where}: {'its' if len(hidden) == 1 else 'their'} open files are not this user's "
                f"to read ({what_would_let_it(or_as=SERVERS_USER)})"
            )
        # where they listen instead, the --host to give: whether nobody else or another program holds this one
        every = listening_sockets_of(port, [*attach, *workers])
        mine = {i for p, inodes in socket_holders({r.inode for r in every}).items() if p in attached for i in inodes}
        theirs = sorted({r.address for r in every if r.inode in mine})
        at = ", ".join(f"[{a}]:{port}" if ":" in a else f"{a}:{port}" for a in theirs)
        subject = who if rows else "they" if plural else "it"  # where another holds it, 'they' would read as those
        listen = f"; {subject} {'listen' if plural else 'listens'} on {at}: give --host {theirs[0]}" if theirs else ""
        if not rows:
            owner = f"nobody listens on {where}"
        elif not holders:
            owner = f"a socket listens on {where}, but no process this user may look into holds it"
        else:
            owner = f"it is held by {_held_by(holders)}"
        raise NotServing(f"--attach: {who} {'hold' if plural else 'holds'} no listener on {where}; {owner}{listen}")
    masters = {_parent(pid) for pid in workers}
    titles = tuple(helpers)
    named = {pid for pid in holders if len(attach) == 1 and _parent(pid) in attach and _named_helper(pid, titles)}
    others = holders.keys() - attached - masters - named
    if others and len(attach) == 1 and list(workers) == [attach[0]] and {_parent(pid) for pid in others} == {attach[0]}:
        # the master waits on the listener and its children that hold it do not: each was forked for a connection
        others = set() if _parent_accepts(attach[0], sorted(others), holders) == FORKS else others
    if others:
        raise NotServing(
            f"--attach: the listener on {where} is held by {_held_by(holders)}, not only by {who}: some "
            "connections would go to processes that are not attached (attach the master's pid or every worker's)"
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


class AttachedServer(Started):
    def __init__(self, spec: ServerSpec, helpers: Sequence[str]) -> None:
        self.spec = spec
        self.helper_titles = tuple(helpers)  # the kinds' helpers' (worker_pids)
        self._pids: list[int] = []
        self._pidfds: list[int] = []
        self._usage: UsageDeltas | None = None
        self._unsettled = 0
        self._attribution: OwnerAttribution | None = None
        self._started = 0.0
        self._threads: dict[str, Any] = {}  # one process of several threads: what the report says (threads_note)
        self._assumed: dict[str, Any] = {}  # listeners taken for dual-stack, their IPV6_V6ONLY unknown
        self._watched: dict[str, Any] = {}  # the listeners each worker's epolls watch: the model's queues

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
        listeners = _listener_inodes(spec.host, spec.port, self._pids)
        self._threads, self._watched = _threads(self._pids, listeners), watched(self._pids, listeners)
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
        counters = self._usage.counters() if self._usage is not None else []
        self.close()
        return counters

    def check_stopped(self) -> None:
        """Nothing to check: the attached server goes on running."""

    def own_evidence(self) -> dict[str, Any]:
        # not ours to read its logs; one process of several threads is said (registry.threads_note), and a listener
        # taken for dual-stack with its IPV6_V6ONLY unknown (experiments/attached_listeners.py), and the listeners
        # each worker waits on (experiments/latency/model_queues.py)
        return ({"threads": self._threads} if self._threads else {}) | self._assumed | self._watched

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

    def __init__(self, helpers: Sequence[str]) -> None:
        """`helpers`: the titles every other kind gives its helpers (ServerKind.helpers), which the registry, that
        imports them all, passes in: a master's children so titled are not its workers."""
        self.helper_titles = tuple(helpers)  # not `helpers`: that is the class's own, none (ServerKind.helpers)

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
        return AttachedServer(spec, self.helper_titles)
