"""The server to observe, found from a pid (master, worker or thread) or a listening port, from /proc only.

A listening socket has no owner, only holders (probes/owner.py socket_holders), so the server is found
through its listeners: those its process (or its children: a master given) holds, every listener on the
same ports in its network namespace (a SO_REUSEPORT group is several), and every process holding one. The
workers are the holders none of whose children holds one too (nginx's and gunicorn's master holds the
listener but never accepts). Where one process is the whole server and it has several threads (HAProxy),
its threads are the workers.

`inspect`'s probes/serving.py finds more (processes fed over Unix sockets, unreadable masters); observe needs
only who accepts, and takes the mechanism from inspect itself (mechanism.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ...errors import NotServing, PlanError
from ...probes.listeners import ListenerRow, listening_sockets
from ...probes.owner import socket_holders
from ...probes.serving import namespace_listeners, process_info, socket_inodes, with_backlogs
from ...servers.attached import worker_pids


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

    @property
    def threaded(self) -> bool:
        return any(u.tid is not None for u in self.units)

    @property
    def inodes(self) -> frozenset[int]:
        return frozenset(row.inode for row in self.listeners)


def comm(pid: int) -> str:
    info = process_info(pid)
    return info.name if info is not None else "?"


def held_sockets(pid: int) -> set[int]:
    """Socket inodes in a process's fd table; empty when gone or not this user's to read."""
    try:
        return socket_inodes(pid)
    except PermissionError:
        return set()


def threads(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if t.isdigit())
    except OSError:
        return []


def _from_pid(pid: int) -> tuple[list[ListenerRow], int]:
    """The listeners on the ports that `pid`'s process (or its children) holds, and the process."""
    info = process_info(pid)  # a thread's id gives its process
    if info is None:
        raise NotServing(f"no process {pid}")
    tgid = info.pid
    try:
        candidates = [tgid, *worker_pids([tgid])]
    except PlanError:
        raise NotServing(f"no process {pid}") from None
    rows = namespace_listeners(tgid)
    inodes = {row.inode for row in rows}
    held: set[int] = set()
    for candidate in dict.fromkeys(candidates):
        held |= held_sockets(candidate) & inodes
    if not held:
        if not os.access(f"/proc/{tgid}/fd", os.R_OK):
            raise NotServing(f"pid {pid} ({comm(tgid)}): its open files are not this user's to read (run as root)")
        raise NotServing(f"pid {pid} ({comm(tgid)}) holds no listening TCP socket, nor do its children")
    ports = {row.port for row in rows if row.inode in held}
    return [row for row in rows if row.port in ports], tgid


def find_server(pid: int | None = None, port: int | None = None) -> Watched:
    """The server behind `pid` or `port` (in this network namespace). NotServing (one line) when none."""
    if pid is not None:
        rows, anchor = _from_pid(pid)
        target = f"pid {pid}"
    else:
        assert port is not None
        rows = listening_sockets(port)
        if not rows:
            raise NotServing(f"nobody listens on port {port} in this network namespace")
        anchor, target = 0, f"port {port}"
    ports = tuple(sorted({row.port for row in rows}))
    holders = socket_holders({row.inode for row in rows})
    if not holders:
        where = ", ".join(map(str, ports))
        raise NotServing(f"a socket listens on port {where}, but no process this user may look into holds it")
    parents = {p: info.ppid if (info := process_info(p)) else None for p in holders}
    workers = sorted((p for p in holders if p not in parents.values()), key=_started)
    common = {parents[p] for p in workers}
    master = common.pop() if len(common) == 1 and common <= holders.keys() else None
    if len(workers) == 1 and len(tids := threads(workers[0])) > 1:
        units = tuple(Unit(workers[0], tid) for tid in tids)
    else:
        units = tuple(Unit(p) for p in workers)
    anchor = anchor or workers[0]
    listeners = tuple(with_backlogs(anchor, rows))  # /proc's rows (another namespace) lack the backlog
    return Watched(target, comm(workers[0]), master, tuple(workers), units, ports, listeners, anchor)


def _started(pid: int) -> tuple[int, int]:
    """Sort key: start time (clock ticks since boot, /proc/PID/stat field 22), then pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rpartition(b")")[2].split()[19]), pid
    except (OSError, ValueError, IndexError):
        return 1 << 62, pid
