"""Who serves: from a pid (master, worker or thread) or a listening port to the server's processes and
listening sockets, read from /proc without touching the server.

A listening socket has no owner in the kernel's tables, only holders (every process whose fd table has
`socket:[INODE]`), so the server is found through its listeners: the listeners the given process holds
(or its parent, a child, or a process at the other end of one of its Unix sockets: a worker fed by an
acceptor holds none), every listener on the same ports in its network namespace (a SO_REUSEPORT group is
several sockets on one port), the processes holding any of them (`socket_holders`), and the processes fed
by those over Unix socketpairs (an acceptor's workers, Node's cluster workers under SCHED_RR). A child is
not taken for the server of a process that holds no listener when that process is init (pid 1 adopts every
orphan) or when its children serve different ports (a supervisor's, a shell's): the error names them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..core.errors import NotServing, PlanError
from ..core.measures import ListenerRow
from .fd_table import FdTables
from .hidden_pids import unseen
from .listeners import listening_sockets
from .owner import socket_holders
from .proc_processes import (
    INIT,
    ProcessInfo,
    children_of,
    listening_children,
    namespace_listeners,
    process_info,
    socket_inodes,
)
from .server_netns import in_namespace_of
from .server_refusals import init_refusal, named, programs, unheld, unreadable
from .unix_peers import unix_names, unix_peers

PID_LIMIT = 1 << 22  # the most kernel.pid_max may be set to (PID_MAX_LIMIT, 64-bit): no process id is larger


def check_pid(pid: int) -> None:
    """PlanError (a usage error) for a number no process can have; one that merely does not exist now is
    NotServing, from find_server (an answer about the machine)."""
    if not 1 <= pid <= PID_LIMIT:
        raise PlanError(f"PID must be between 1 and {PID_LIMIT} (no process id is larger), got {pid}")


@dataclass(frozen=True)
class Server:
    """The processes that serve (parents before children) and every listener they hold or that shares a
    port with one of them. `holders`: pid -> listener inodes in its fd table; `fed`: processes holding none
    that talk to a holder over a Unix socketpair; `peers`: Unix socket inode -> its peer's (may be {})."""

    processes: tuple[ProcessInfo, ...]
    listeners: tuple[ListenerRow, ...]
    holders: dict[int, frozenset[int]]
    fed: frozenset[int]
    peers: dict[int, int]
    hidden: tuple[int, ...]  # processes whose open files this user may not read

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def process(self, pid: int) -> ProcessInfo | None:
        return next((p for p in self.processes if p.pid == pid), None)


def with_backlogs(pid: int, rows: list[ListenerRow]) -> list[ListenerRow]:
    """The rows with the listen() backlog from inet_diag, asked inside the server's namespace (the /proc
    rows lack it); unchanged where netlink cannot be asked there."""
    ports = sorted({row.port for row in rows})
    try:
        diag = in_namespace_of(pid, lambda: [r for port in ports for r in listening_sockets(port)])
    except OSError:
        return rows
    by_inode = {r.inode: r for r in diag if r.source == "netlink"}
    return [by_inode.get(row.inode, row) for row in rows]


def _peers(pid: int) -> dict[int, int]:
    try:
        return in_namespace_of(pid, unix_peers)
    except OSError:
        return {}


def find_server(pid: int | None = None, port: int | None = None, tables: FdTables | None = None) -> Server:
    """The server behind a pid or a port. NotServing (one line) when there is none. `tables`: the look's fd
    tables, read through and kept for what it asks next (its samples); a table of its own when not given."""
    tables = tables if tables is not None else FdTables()
    if pid is not None:
        start = process_info(pid)
        if start is None:
            raise NotServing(unseen(pid))  # gone, or hidden by /proc's hidepid: the kernel tells which
        anchor = start.pid
        group = namespace_listeners(anchor)
        inodes = {row.inode for row in group}
        try:
            held = socket_inodes(anchor, tables) & inodes
        except PermissionError:
            if start.pid == INIT:  # init is seldom the server: its adopted children may be, and can be read
                raise NotServing(init_refusal(start, group, files_read=False)) from None
            raise NotServing(f"pid {pid} ({start.name}): its open files are {unreadable()}") from None
        if not held and start.pid == INIT:
            raise NotServing(init_refusal(start, group))
        if not held:
            held = _held_by_relatives(start, group, tables)
        if not held:
            raise NotServing(
                f"pid {pid} ({start.name}) holds no listening TCP socket, nor does its parent, a child or a "
                "process at the other end of one of its Unix sockets"
            )
    else:
        assert port is not None
        group = listening_sockets(port)
        if not group:
            raise NotServing(f"nobody listens on port {port} in this network namespace")
        held = {row.inode for row in group}
        anchor = os.getpid()
    ports = {row.port for row in group if row.inode in held}
    rows = [row for row in group if row.port in ports]
    holders = {p: frozenset(i) for p, i in socket_holders({row.inode for row in rows}, tables=tables).items()}
    if not holders:
        raise NotServing(unheld(rows, anchor))
    mine, rows = _this_server(holders, rows, held if pid is not None else set(next(iter(holders.values()))))
    if pid is None and len(mine) < len(holders):  # --port of two programs read as one: 'python3, master (nginx's)'
        raise NotServing(f"port {port} is served by more than one program: {programs(holders, group)}: give the pid")
    holders = mine
    anchor = next(iter(holders)) if pid is None else anchor
    peers = _peers(anchor)
    infos = {p: info for p in holders if (info := process_info(p)) is not None}
    if not infos:  # every holder ended since its fd table was read (a reload's old workers): no server left to show
        raise NotServing(_ended(pid, port))
    fed = _fed(infos, peers, tables)
    infos.update({p: info for p in fed if (info := process_info(p)) is not None})
    infos.update(_unreadable_parents(infos, tables))
    hidden = tuple(sorted(p for p in infos if not tables.readable(p)))
    return Server(_tree_order(infos), tuple(rows), holders, frozenset(fed), peers, hidden)


def _ended(pid: int | None, port: int | None) -> str:
    """What to say when the processes found holding the listeners ended before they were read: the asked-for
    process's end as for a pid that does not exist, else the holders'."""
    if pid is not None and process_info(pid) is None:
        return f"no process {pid}: it ended while it was read"
    asked = f"pid {pid}" if pid is not None else f"port {port}"
    return f"{asked}: the processes holding its listeners ended while they were read"


def _this_server(
    holders: dict[int, frozenset[int]], rows: list[ListenerRow], held: set[int]
) -> tuple[dict[int, frozenset[int]], list[ListenerRow]]:
    """The holders of `held` and their parents, children and siblings (not init's: every orphan's), with what they
    hold: another program on the port at another address is none of the server (a python3 beside nginx named it
    'python3', and its queue read as nginx's: 'connections waited and none was taken'). One no one holds stays."""
    core = {p for p, inodes in holders.items() if inodes & held}
    parents = {p: info.ppid if (info := process_info(p)) else 0 for p in holders}
    family = core | {parents[p] for p in core} | {p for p in holders if parents[p] in core - {INIT}}
    siblings = {parents[p] for p in core} - {0, INIT}
    kept = {p: inodes for p, inodes in holders.items() if p in family or parents[p] in siblings}
    theirs = set().union(*holders.values()) - set().union(*kept.values())
    return kept, [row for row in rows if row.inode not in theirs]


def _held_by_relatives(start: ProcessInfo, group: list[ListenerRow], tables: FdTables) -> set[int]:
    """Listeners held by the parent or a child of `start` (a Node worker's primary; a master given a
    worker's pid), else by a sibling, parent or child at the other end of one of its Unix sockets.
    NotServing when its children serve different ports (a supervisor's, a shell's): none is its server."""
    listeners = {row.inode for row in group}
    for relative in sorted({start.ppid} - {0, INIT}):
        try:
            held = socket_inodes(relative, tables) & listeners
        except PermissionError:
            continue
        if held:
            return held
    children = listening_children(start.pid, group, tables)
    if len({ports for _, ports in children.values()}) > 1:
        raise NotServing(
            f"pid {start.pid} ({start.name}) holds no listening TCP socket; its children serve different "
            f"ports: {named(children)}: give the pid of the one to look at, or --port"
        )
    if children:
        return set().union(*(held for held, _ in children.values()))
    relatives = {start.ppid, *children_of([start.pid])} - {0, INIT}
    peers = _peers(start.pid)
    try:
        ends = {peers[i] for i in socket_inodes(start.pid, tables) if i in peers}
    except PermissionError:
        return set()
    nearby = relatives | children_of([start.ppid])
    for holder in socket_holders(ends, sorted(nearby - {start.pid}), tables):
        try:
            held = socket_inodes(holder, tables) & listeners
        except PermissionError:
            continue
        if held:
            return held
    return set()


def _fed(holders: dict[int, ProcessInfo], peers: dict[int, int], tables: FdTables) -> set[int]:
    """Children and siblings of the holders that hold no listener but share a Unix socketpair with a holder."""
    if not peers:
        return set()
    ends: set[int] = set()
    for pid in holders:
        try:
            ends |= {peers[i] for i in peers.keys() & tables.sockets(pid)}
        except PermissionError:
            continue
    nearby = children_of(holders) | children_of({info.ppid for info in holders.values()})
    found = set(socket_holders(ends, sorted(nearby - set(holders)), tables))
    return found - _helpers(found, ends, next(iter(holders)), tables) if found else found


def _helpers(found: set[int], ends: set[int], anchor: int, tables: FdTables) -> set[int]:
    """Those of `found` that the holders connected to, on a named Unix socket each listens on, rather than
    socketpairs they were handed: a helper serving the server, not a worker it feeds (h2o's neverbleed, the
    child keeping TLS's private key: taken for workers fed by an acceptor, h2o read as fd-pass)."""
    try:
        names = in_namespace_of(anchor, unix_names)
    except OSError:
        return set()  # netlink cannot be asked there: as a socketpair, as before
    helpers: set[int] = set()
    for pid in found:
        try:
            held = set(tables.sockets(pid))
        except PermissionError:
            continue
        if names.accepted_from_own(held & ends, held):
            helpers.add(pid)
    return helpers


def _unreadable_parents(infos: dict[int, ProcessInfo], tables: FdTables) -> dict[int, ProcessInfo]:
    """The workers' parent when this user may not read its open files (a master running as root over
    workers running as nobody): it may hold the listeners too, and the report must say it could not look."""
    found: dict[int, ProcessInfo] = {}
    for ppid in {info.ppid for info in infos.values()} - set(infos) - {0, 1}:
        if not tables.readable(ppid) and (info := process_info(ppid)) is not None:
            found[ppid] = info
    return found


def _tree_order(infos: dict[int, ProcessInfo]) -> tuple[ProcessInfo, ...]:
    """Parents before their children, each level by pid (the order workers were forked in)."""

    def depth(info: ProcessInfo) -> int:
        d, parent = 0, info.ppid
        while parent in infos and d < len(infos):
            d, parent = d + 1, infos[parent].ppid
        return d

    return tuple(sorted(infos.values(), key=lambda i: (depth(i), i.pid)))
