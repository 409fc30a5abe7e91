"""A process as /proc tells it, read without touching it: its name, parent, argv and user (of a thread: its
process's), its children, the sockets in its fd table, the listeners of its network namespace, and its children
that hold some of them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..core.measures import ListenerRow
from .fd_table import FdTables
from .listeners import netlink_all_listeners, parse_proc_net_tcp
from .proc_read import read_proc
from .server_netns import in_namespace_of

INIT = 1  # this PID namespace's init: every orphan's parent, so its children are no server of its own


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    name: str  # comm
    argv: tuple[str, ...]
    uid: int | None


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


def listening_children(
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
