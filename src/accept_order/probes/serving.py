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
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.capabilities import PTRACE, holds, what_would_let_it
from ..core.errors import NotServing, PlanError
from ..core.measures import ListenerRow
from .fd_table import FdTables
from .listeners import listening_sockets, netlink_all_listeners, parse_proc_net_tcp
from .owner import socket_holders
from .proc_read import read_proc
from .server_netns import in_namespace_of
from .unix_peers import unix_names, unix_peers

PID_LIMIT = 1 << 22  # the most kernel.pid_max may be set to (PID_MAX_LIMIT, 64-bit): no process id is larger
INIT = 1  # this PID namespace's init: every orphan's parent, so its children are no server of its own
SHOWN = 3  # listening children named in a refusal


def check_pid(pid: int) -> None:
    """PlanError (a usage error) for a number no process can have; one that merely does not exist now is
    NotServing, from find_server (an answer about the machine)."""
    if not 1 <= pid <= PID_LIMIT:
        raise PlanError(f"PID must be between 1 and {PID_LIMIT} (no process id is larger), got {pid}")


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    name: str  # comm
    argv: tuple[str, ...]
    uid: int | None


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


def _read(path: str) -> str | None:
    data = read_proc(path)
    return None if data is None else data.decode("utf-8", "replace")


def process_info(pid: int) -> ProcessInfo | None:
    """The process (or the process of thread `pid`), or None when there is none."""
    status = _read(f"/proc/{pid}/status")
    if status is None:
        return None
    fields = _fields(status, ("Name", "Tgid", "PPid", "Uid"))
    tgid = int(fields.get("Tgid", str(pid)).strip())
    if tgid != pid:
        return process_info(tgid)
    argv = tuple(a for a in (_read(f"/proc/{pid}/cmdline") or "").split("\0") if a)
    uid = fields.get("Uid", "").split()
    return ProcessInfo(
        pid, int(fields.get("PPid", "0").strip()), fields.get("Name", "?").strip(), argv, int(uid[0]) if uid else None
    )


def _fields(status: str, names: tuple[str, ...]) -> dict[str, str]:
    """The named lines of /proc/PID/status ("Name:\tnginx"), as a dict of every line would have them (the last
    line of a name; the value after the first colon): a 256-worker server's 257 status files of 55 lines each
    were 14,000 lines split and kept for four."""
    fields: dict[str, str] = {}
    for line in status.splitlines():
        name, colon, value = line.partition(":")
        if colon and name in names:
            fields[name] = value
    return fields


def children_of(pids: Iterable[int]) -> set[int]:
    from .proc_waits import thread_ids  # inspect's; run and observe find servers without it

    wanted = set(pids)
    found: set[int] = set()
    for pid in wanted:
        for tid in thread_ids(pid):  # one stat for a process of one thread (a 64-worker nginx's holders)
            text = _read(f"/proc/{pid}/task/{tid}/children") or ""
            found.update(int(c) for c in text.split())
    return found


def socket_inodes(pid: int, tables: FdTables | None = None) -> set[int]:
    """Every socket inode in `pid`'s fd table (read now, or as `tables` has it). PermissionError: not this
    user's to read."""
    return set((tables if tables is not None else FdTables()).sockets(pid))


def namespace_listeners(pid: int) -> list[ListenerRow]:
    """Every listening TCP socket in `pid`'s network namespace: one inet_diag dump of its listeners, asked
    inside it; where it may not be entered, /proc/PID/net/tcp{,6} (no backlog). Those files list every
    socket of the namespace, a line each: with 20,000 established and 35,000 in TIME_WAIT here, reading and
    parsing them took 0.32 s of CPU, the dump under 1 ms."""
    try:
        return in_namespace_of(pid, netlink_all_listeners)
    except OSError:
        pass  # not Linux's netlink, or another namespace this process may not enter
    rows: list[ListenerRow] = []
    for name, family in (("tcp", "ipv4"), ("tcp6", "ipv6")):
        text = _read(f"/proc/{pid}/net/{name}")
        if text is not None:
            rows += parse_proc_net_tcp(text, family)  # type: ignore[arg-type]
    return rows


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
            raise NotServing(f"no process {pid}")
        anchor = start.pid
        group = namespace_listeners(anchor)
        inodes = {row.inode for row in group}
        try:
            held = socket_inodes(anchor, tables) & inodes
        except PermissionError:
            if start.pid == INIT:  # init is seldom the server: its adopted children may be, and can be read
                raise NotServing(_init_refusal(start, group, files_read=False)) from None
            raise NotServing(f"pid {pid} ({start.name}): its open files are {_unreadable()}") from None
        if not held and start.pid == INIT:
            raise NotServing(_init_refusal(start, group))
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
        raise NotServing(_unheld(rows, anchor))
    mine, rows = _this_server(holders, rows, held if pid is not None else set(next(iter(holders.values()))))
    if pid is None and len(mine) < len(holders):  # --port of two programs read as one: 'python3, master (nginx's)'
        raise NotServing(f"port {port} is served by more than one program: {_programs(holders, group)}: give the pid")
    holders = mine
    anchor = next(iter(holders)) if pid is None else anchor
    peers = _peers(anchor)
    infos = {p: info for p in holders if (info := process_info(p)) is not None}
    fed = _fed(infos, peers, tables)
    infos.update({p: info for p in fed if (info := process_info(p)) is not None})
    infos.update(_unreadable_parents(infos, tables))
    hidden = tuple(sorted(p for p in infos if not tables.readable(p)))
    return Server(_tree_order(infos), tuple(rows), holders, frozenset(fed), peers, hidden)


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


def _programs(holders: dict[int, frozenset[int]], group: list[ListenerRow]) -> str:
    """`nginx (pid 20674) on 127.0.0.1:18341, python3 (pid 19535) on 127.0.0.2:18341`: each program's first pid."""
    at = {row.inode: _at(row) for row in group}
    names = {p: info.name if (info := process_info(p)) else "?" for p in sorted(holders, reverse=True)}  # first wins
    said = {(n, w): f"{n} (pid {p}) on {w}" for p, n in names.items() for w in {at[i] for i in holders[p] if i in at}}
    return ", ".join(list(said.values())[:SHOWN]) + (f" and {len(said) - SHOWN} more" if len(said) > SHOWN else "")


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
    children = _listening_children(start.pid, group, tables)
    if len({ports for _, ports in children.values()}) > 1:
        raise NotServing(
            f"pid {start.pid} ({start.name}) holds no listening TCP socket; its children serve different "
            f"ports: {_named(children)}: give the pid of the one to look at, or --port"
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


def _listening_children(
    pid: int, group: list[ListenerRow], tables: FdTables | None = None
) -> dict[int, tuple[set[int], tuple[int, ...]]]:
    """pid's children that hold one of the listeners in `group`: child -> (those listeners, their ports)."""
    port_of = {row.inode: row.port for row in group}
    found: dict[int, tuple[set[int], tuple[int, ...]]] = {}
    for child in sorted(children_of([pid])):
        try:
            held = socket_inodes(child, tables) & port_of.keys()
        except PermissionError:
            continue
        if held:
            found[child] = (held, tuple(sorted({port_of[i] for i in held})))
    return found


def _named(children: dict[int, tuple[set[int], tuple[int, ...]]]) -> str:
    """`nginx (pid 4573) on port 8080, sshd (pid 201) on port 22 and 2 more`: one process per port set."""
    seen: dict[tuple[int, ...], str] = {}
    for child, (_, ports) in children.items():
        if ports not in seen:
            info = process_info(child)
            name = info.name if info is not None else "?"
            seen[ports] = f"{name} (pid {child}) on port {', '.join(map(str, ports))}"
    shown = list(seen.values())
    more = f" and {len(shown) - SHOWN} more" if len(shown) > SHOWN else ""
    return ", ".join(shown[:SHOWN]) + more


def _unreadable() -> str:
    """Why a process's open files could not be read, and what would: root may lack CAP_SYS_PTRACE (a container's)
    or meet a process the kernel keeps from it (a sandbox's init)."""
    if os.geteuid() == 0:
        return f"not readable here even by root ({what_would_let_it()})"
    return f"not this user's to read ({what_would_let_it(or_as='its user')})"


def _init_refusal(start: ProcessInfo, group: list[ListenerRow], files_read: bool = True) -> str:
    """pid 1 holds no listener (or its files could not be read): what it is, and its children that do (orphans it
    adopted, unrelated)."""
    held = "holds no listening TCP socket" if files_read else f"its own open files are {_unreadable()}"
    said = f"pid {INIT} ({start.name}) is init, every orphaned process's parent, and {held}"
    children = _listening_children(start.pid, group)
    if not children:
        return f"{said}; {'nor does any of its children' if files_read else 'none of its children listens'}"
    return f"{said}; of its children, {_named(children)}: give the pid of the one to look at, or --port"


def _unheld(rows: list[ListenerRow], anchor: int) -> str:
    """Why listeners were seen and no holder found, from what is seen: gone at a second look (closing),
    in no fd table root can read (in flight, the kernel's, another PID namespace's), or unreadable."""
    where = ", ".join(f"{_at(row)} (inode {row.inode})" for row in rows[:SHOWN])
    where += f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else ""
    one = len(rows) == 1
    now = {row.inode for row in namespace_listeners(anchor)}  # a second look, in the same namespace
    if not {row.inode for row in rows} & now:
        what = "a socket" if one else f"{len(rows)} sockets"
        return f"{what} listened on {where} and had closed at a second look: the server stopped listening there"
    seen = f"{'a socket listens' if one else f'{len(rows)} sockets listen'} on {where}"
    if any(row.inode == 0 for row in rows):
        return f"{seen} with no file left (inode 0): closing"
    reader = what_would_let_it()
    if holds(PTRACE):  # every fd table was read but those the kernel keeps even from ptrace
        return (
            f"{seen}, but no process's open files hold {'it' if one else 'them'}: closing, in flight over a Unix "
            f"socket, the kernel's own, held in another PID namespace, or held by {reader}"
        )
    return f"{seen}, but no process this user may look into holds {'it' if one else 'them'} ({reader})"


def _at(row: ListenerRow) -> str:
    return f"[{row.address}]:{row.port}" if ":" in row.address else f"{row.address}:{row.port}"


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
