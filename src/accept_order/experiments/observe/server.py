"""The server to observe, found from a pid (master, worker or thread) or a listening port, from /proc only.

inspect's probes/serving.py finds the server through its listeners (a listening socket has no owner, only
holders): every listener on the ports the given process holds, and every process holding one. Of those,
observe watches the ones that accept: the holders none of whose children holds one too (nginx's and
gunicorn's master holds the listener but never accepts), unless the master itself waits on the listener and
its children do not: those were forked for a connection each (socketserver's ForkingMixIn; accept_waits.py); a
parent that waits on the listener while its children wait their turn is a worker among them, the first (uWSGI
without --master), and no master, unless its own parent, of the same program, holds the listener too (Puma's
--fork-worker: worker 0 forks the others, the master forked it).
Where one process is the whole server and it has several threads, its threads are the workers: for HAProxy,
and for a server this tool does not know (for the kinds it knows, ServerKind.threads_are_workers says), or its
event loops, where each serving thread runs one (h2o: ServerKind.loops_are_workers, probes/event_loops.py).

Where one process accepts every connection and hands it to others over Unix sockets (fd-pass: Node's cluster
under its default SCHED_RR, whose primary alone holds the listener), the workers are the processes it feeds,
which hold the connections, and it is the acceptor: inspect's look decides (inspect/run.py `looks`, the one
reading of the case), asked only where some process that holds no listener talks to one that does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

from ...core.measures import ListenerRow
from ...core.models import Mechanism
from ...probes import serving
from ...probes.accept_waits import FORKS, SERVES, parent_accepts
from ...probes.accept_watch import ThreadCounts
from ...probes.fd_table import FdTables, read_links
from ...probes.proc_processes import children_of, process_info, socket_inodes
from ...probes.serving import with_backlogs
from ...servers.watched import gone


@dataclass(frozen=True)
class Unit:
    """A worker: a process, or one thread of a threaded server (`tid` set)."""

    pid: int
    tid: int | None = None

    @property
    def id(self) -> int:
        """What /proc and the kernel call it: the thread's id, or the process's."""
        return self.tid if self.tid is not None else self.pid


@dataclass(frozen=True)
class Watched:
    target: str  # what was asked for: "pid 123" or "port 8080"
    program: str  # the workers' command name (comm)
    master: int | None  # the workers' parent when it holds the listener too
    workers: tuple[int, ...]  # the processes that accept, oldest first
    units: tuple[Unit, ...]  # the workers as the report counts them: processes, or the threads of one
    ports: tuple[int, ...]
    listeners: tuple[ListenerRow, ...]
    netns_pid: int  # a process in the server's network namespace: its /proc/PID/net is the server's
    acceptor: int | None = None  # fd-pass: the process that accepts and hands each connection to a worker
    forking: bool = False  # the one worker forks a child for each connection it accepts, which holds it (ForkingMixIn)

    @property
    def threaded(self) -> bool:
        return any(u.tid is not None for u in self.units)

    @property
    def inodes(self) -> frozenset[int]:
        return frozenset(row.inode for row in self.listeners)

    def left_out(self, totals: ThreadCounts | None) -> list[str]:
        """What the kernel counted (accepts per (pid, tid), as traced) for threads of the watched processes that
        are not among the workers: a thread started after they were chosen, or one that was not running a loop
        on the listener then (h2o's, ServerKind.loops_are_workers). None where the workers are processes: each
        counts every thread of its own. Only the listeners' accepts: those asked of a descriptor that is none of
        them (a metrics thread's own port) are no connection of theirs."""
        if totals is None or not self.threaded:
            return []
        units = {(u.pid, u.tid) for u in self.units}
        mine = set(self.workers)  # another process's (a newcomer counted by its name, newcomers.py) is said apart
        on = {key: n for key, n in totals.on.items() if key[:2] not in units and key[0] in mine}
        elsewhere = _elsewhere(on, self.inodes)
        others = {
            key: left
            for key, n in totals.accepted.items()
            if key not in units and key[0] in mine and (left := n - elsewhere.get(key, 0))
        }
        if not others:
            return []
        each = ", ".join(f"thread {tid} of pid {pid} {n:,}" for (pid, tid), n in sorted(others.items()))
        total = sum(others.values())
        return [
            f"{total:,} {'accept' if total == 1 else 'accepts'} of the listener's connections by other threads, "
            f"counted by the kernel but not among the workers above ({each}): the workers were chosen as observe "
            "began (a thread started since, or one that ran no loop on the listener then, is not among them)"
        ]


def _elsewhere(on: Mapping[tuple[int, int, int], int], inodes: frozenset[int]) -> dict[tuple[int, int], int]:
    """Per (pid, tid), the accepts asked of a descriptor that is, in its process's fd table now, a socket other
    than the listeners (`inodes`). One whose descriptor was not seen (0: the call began before the probes
    attached), is closed now, or is of a process gone or not this user's to read, is not known to be elsewhere."""
    tables = {pid: read_links(pid) or {} for pid in {pid for pid, _, _ in on}}
    out: dict[tuple[int, int], int] = {}
    for (pid, tid, fd), n in on.items():
        link = tables[pid].get(fd - 1, "") if fd else ""
        if link.startswith("socket:[") and int(link[8:-1]) not in inodes:
            out[(pid, tid)] = out.get((pid, tid), 0) + n
    return out


def comm(pid: int) -> str:
    info = process_info(pid)
    return info.name if info is not None else "?"


def held_sockets(pid: int) -> set[int]:
    """Socket inodes in a process's fd table; empty when gone or not this user's to read."""
    try:
        return socket_inodes(pid)
    except PermissionError:
        return set()


def forked_sockets(watched: Watched, pid: int) -> set[int]:
    """Socket inodes held by the children a forking worker made for its connections (watched.forking); none
    otherwise. A child gone meanwhile, or not this user's to read, holds none."""
    if not watched.forking:
        return set()
    found: set[int] = set()
    for child in children_of([pid]):
        try:
            found |= socket_inodes(child)
        except OSError:  # gone, or another user's
            continue
    return found


def threads(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if t.isdigit())
    except OSError:
        return []


def find_server(pid: int | None = None, port: int | None = None) -> Watched:
    """The server behind `pid` or `port` (in this network namespace), as inspect finds it (a pid that holds
    no listener leads to its parent's or a child's). NotServing (one line) when there is none.

    A master still starting is read again until its reading holds (servers/attached_start.py: gunicorn forks its
    workers 0.1 s apart; read at once, the master alone, or one worker of three, was the server)."""
    from ...servers.attached_start import POLL_S, SETTLE_S, STARTING_S, age_s

    deadline = time.monotonic() + STARTING_S
    watched = _find_server(pid, port)
    since = time.monotonic()
    while time.monotonic() < deadline and (age_s(_root(watched)) or STARTING_S) < STARTING_S:
        if time.monotonic() - since >= SETTLE_S:
            break
        time.sleep(POLL_S)
        again = _find_server(pid, port)
        if (again.workers, again.master) != (watched.workers, watched.master):
            since = time.monotonic()
        watched = again
    return watched


def _root(watched: Watched) -> int:
    """The process that starts the workers: their master, or the one worker (a master that serves alone)."""
    return watched.master if watched.master is not None else watched.acceptor or watched.workers[0]


def _find_server(pid: int | None, port: int | None) -> Watched:
    with FdTables(keep=True) as tables:
        server = serving.find_server(pid, port, tables)
        # the look (30-60 ms, a second on a busy machine) only where an acceptor can be: one holder, fed ones
        acceptor, fed = _acceptor(server, tables) if server.fed and len(server.holders) == 1 else (None, ())
    holders = server.holders
    parents = {p: info.ppid if (info := process_info(p)) else None for p in (*holders, *fed)}
    # fed workers hold no listener: their parent is the master when it holds one (Node's primary, the acceptor)
    workers = sorted(fed or (p for p in holders if p not in parents.values()), key=_started)
    common = {parents[p] for p in workers}
    master = common.pop() if len(common) == 1 and common <= holders.keys() else None
    forking = False
    role = parent_accepts(master, workers, holders[master]) if master is not None and not fed else None
    if role == FORKS and master is not None:
        # the master accepts; the children that hold the listener were forked for a connection each (ForkingMixIn)
        workers, master, forking = [master], None, True
    elif role == SERVES and master is not None:
        # the parent accepts as its children do: their first worker (uWSGI without --master), and its own parent is
        # the master where it holds the listener too and is the same program (Puma's --fork-worker: the master forks
        # worker 0, which forks the others; not what started the server holding it, as systemd a socket unit's),
        # else there is none
        up = parents.get(master)
        ours = up is not None and up in holders and comm(up) == comm(master)
        workers, master = sorted([master, *workers], key=_started), up if ours else None
    by_thread = _serving_threads(workers[0]) if len(workers) == 1 else ()
    units = tuple(Unit(workers[0], tid) for tid in by_thread) if by_thread else tuple(Unit(p) for p in workers)
    rows = server.listeners
    ports = tuple(sorted({row.port for row in rows}))
    listeners = tuple(with_backlogs(workers[0], list(rows)))  # /proc's rows (another namespace) lack the backlog
    target = f"pid {pid}" if pid is not None else f"port {port}"
    return Watched(
        target, comm(workers[0]), master, tuple(workers), units, ports, listeners, workers[0], acceptor, forking
    )


def _acceptor(server: serving.Server, tables: FdTables) -> tuple[int | None, tuple[int, ...]]:
    """The acceptor and the processes it feeds, where inspect's look at the threads names fd-pass (one process
    waits on the listeners, the fed ones on Unix sockets whose other end it holds) and the acceptor is the
    listeners' only holder; (None, ()) otherwise: a process on a Unix socket to a worker is not always fed
    connections, and a look that found everyone busy cannot say.

    The look alone names fd-pass wherever one process waits on the listener and another, holding none, waits
    on a Unix socket the waiter holds: nginx with one worker (or accept_mutex on, where only the lock's holder
    waits on it) and proxy_cache_path, whose cache manager and loader wait on their channels to the master and
    the workers, was watched as two workers fed by its one real worker, untraced, seeing nothing. An acceptor
    holds the listeners alone (Node's primary under SCHED_RR, the built-in fd-pass mode's acceptor); nginx's
    master holds them beside its workers."""
    from ..inspect.run import looks

    verdict, _, _, _ = looks(server, tables)
    if verdict.mechanism != Mechanism.FD_PASS:
        return None, ()
    acceptor = verdict.waiters[0][0]
    if server.holders.keys() != {acceptor}:
        return None, ()  # find_server asks only of one holder: this is its own check
    # every process on a socketpair with it, not only those the sample saw waiting on one: a Node worker whose
    # main thread sat in a futex (a GC pause, Atomics.wait) was left out, its connections with it
    return acceptor, tuple(sorted(server.fed))


def _serving_threads(pid: int) -> tuple[int, ...]:
    """The threads of a one-process server that are its workers (servers/registry.py says, as for latency): every
    thread where they are (HAProxy's, or a program this tool does not know), its event loops where each serving
    thread runs one (h2o: ServerKind.loops_are_workers; its timer thread serves none) where it has several; none
    where the process is one worker (Puma's pool, Go's runtime, h2o's one loop) or has one thread. observe of h2o's
    4 loops read '1 worker ... its one worker took all 8 connections' where one loop of four had taken them all."""
    from ...probes.event_loops import loop_threads
    from ...servers.registry import recognise

    tids = threads(pid)
    if len(tids) < 2:
        return ()
    info = process_info(pid)
    kind = recognise(info.name, info.argv) if info is not None else None
    if kind is not None and kind.loops_are_workers:  # one loop is the process's one worker, as latency models it
        return loops if len(loops := loop_threads(pid, tids)) > 1 else ()
    return tuple(tids) if kind is None or kind.threads_are_workers else ()


def _started(pid: int) -> tuple[int, int]:
    """Sort key: start time (clock ticks since boot, /proc/PID/stat field 22), then pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rpartition(b")")[2].split()[19]), pid
    except (OSError, ValueError, IndexError):
        return 1 << 62, pid


def every_worker_exited(master: int | None, replaced: str | None = None, counted: bool = False) -> str:
    """The note where every worker watched exited. A master that runs on has replaced them (gunicorn's
    --max-requests, a reload): the server did not stop, observe did (the new workers are not watched, or, `counted`,
    their accepts are said in a note of their own: a reload's newcomers the kernel counted). `replaced`: what a
    newcomer holding its listener says (reloaded.py's replaced_note), where no master runs on with others."""
    if master is None or gone(master):
        return replaced or "every worker had exited: the server stopped while it was observed"
    if not [child for child in children_of([master]) if not gone(child)]:  # none replaced them (yet)
        if replaced:  # a newcomer that is no child of this master holds the listener: a new master's (a re-exec)
            return replaced
        return (
            f"every worker watched had exited and the master (pid {master}) has no other: it may be stopping, or "
            "be about to replace them (the master of a server that stops exits after its workers)"
        )
    if counted:  # beside the note crediting them, not 'not watched'
        return (
            f"every worker watched had exited while the master (pid {master}) runs on: observe ended there; the "
            "workers that replaced them are not among those above (the note on them says what each accepted)"
        )
    return (
        f"every worker watched had exited while the master (pid {master}) runs on: observe ended there, as the "
        "workers that replaced them are not watched"
    )
