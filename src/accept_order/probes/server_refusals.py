"""What NotServing says where no server was found behind a pid or a port (serving.find_server): init and its
listening children, the programs sharing a port, a process whose files may not be read, listeners that no process
holds (closing, in flight, another namespace's), each in one line."""

from __future__ import annotations

import os

from ..core.capabilities import PTRACE, holds, what_would_let_it
from ..core.measures import ListenerRow
from .proc_processes import (
    INIT,
    ProcessInfo,
    listening_children,
    namespace_listeners,
    process_info,
)

SHOWN = 3  # listening children named in a refusal


def programs(holders: dict[int, frozenset[int]], group: list[ListenerRow]) -> str:
    """`nginx (pid 20674) on 127.0.0.1:18341, python3 (pid 19535) on 127.0.0.2:18341`: each program's first pid."""
    at = {row.inode: _at(row) for row in group}
    names = {p: info.name if (info := process_info(p)) else "?" for p in sorted(holders, reverse=True)}  # first wins
    said = {(n, w): f"{n} (pid {p}) on {w}" for p, n in names.items() for w in {at[i] for i in holders[p] if i in at}}
    return ", ".join(list(said.values())[:SHOWN]) + (f" and {len(said) - SHOWN} more" if len(said) > SHOWN else "")


def named(children: dict[int, tuple[set[int], tuple[int, ...]]]) -> str:
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


def unreadable() -> str:
    """Why a process's open files could not be read, and what would: root may lack CAP_SYS_PTRACE (a container's)
    or meet a process the kernel keeps from it (a sandbox's init)."""
    if os.geteuid() == 0:
        return f"not readable here even by root ({what_would_let_it()})"
    return f"not this user's to read ({what_would_let_it(or_as='its user')})"


def init_refusal(start: ProcessInfo, group: list[ListenerRow], files_read: bool = True) -> str:
    """pid 1 holds no listener (or its files could not be read): what it is, and its children that do (orphans it
    adopted, unrelated)."""
    held = "holds no listening TCP socket" if files_read else f"its own open files are {unreadable()}"
    said = f"pid {INIT} ({start.name}) is init, every orphaned process's parent, and {held}"
    children = listening_children(start.pid, group)
    if not children:
        return f"{said}; {'nor does any of its children' if files_read else 'none of its children listens'}"
    return f"{said}; of its children, {named(children)}: give the pid of the one to look at, or --port"


def unheld(rows: list[ListenerRow], anchor: int) -> str:
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
