"""A process's children, from the kernel's own lists rather than a scan of every process on the machine.

psutil's Process.children() finds children by reading the parent of every process in /proc: 6-15 ms a call
on a machine running a few hundred processes. A launched server's start-up polls its master's children every
5 ms until every worker is ready, and that poll was most of the tool's own CPU while uvicorn, puma, granian or
gunicorn started (uvicorn, 2 workers: 131 calls, 0.68 of the command's 1.0 CPU-s). /proc/PID/task/TID/children
lists each thread's children directly (CONFIG_PROC_CHILDREN, Linux 3.5+); where it is missing, psutil's scan.
The kernel does not promise that a list read while some children exit names every live one: a poll reads again.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .proc_read import read_proc

if TYPE_CHECKING:
    import psutil


def _child_pids(pid: int) -> list[int] | None:
    """The pids the kernel lists as children of any of `pid`'s threads; None where the lists do not exist."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []  # gone: no children
    if not os.path.exists(f"/proc/{pid}/task/{tids[0] if tids else pid}/children"):
        return None
    found: set[int] = set()  # once each: a thread that exits while they are read hands its children to another
    for tid in tids:
        listed = read_proc(f"/proc/{pid}/task/{tid}/children")
        if listed:  # None: the thread ended meanwhile
            found.update(int(child) for child in listed.split())
    return sorted(found)


def children(master: psutil.Process) -> list[psutil.Process]:
    """`master.children()` (its direct children, running or zombies), read from the kernel's lists."""
    import psutil

    pids = _child_pids(master.pid)
    if pids is None:
        return master.children()
    found = []
    for pid in sorted(pids):
        try:
            found.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
    return found
