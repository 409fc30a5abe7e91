"""Which connections each thread of a process watches in its own epoll instance, read from /proc alone.

A server whose threads each run an event loop of their own (HAProxy: one epoll per thread, `nbthread`) registers a
connection in the epoll of the thread that serves it: HAProxy hands each connection it accepts to one thread (its
multi-queue), and that thread's poller alone watches it. Which epoll a thread polls is the first argument of the
epoll_wait it sleeps in (/proc/PID/task/TID/syscall: known only while it waits there, so a thread that runs at
every look is not placed); what an epoll watches is its fdinfo (/proc/PID/fdinfo/EPFD: each target's fd and
inode). Both change nothing in the process (HAProxy 2.6, 4 threads, 8 kept connections: each thread's epoll
watched the 2 its replies named it serving, and no other), but the fdinfo is printed under the epoll's lock, which
the thread polling it waits for to take its events: 1.2-1.4 ms a read at 1,000 targets (load 7), and read every
0.1 s under wrk, HAProxy's threads slept on it 10 times in 10 s (2.4 ms each on average); hence a look at most
once an interval (observe's thread_split.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .fd_table import parse_epoll_fdinfo, read_links
from .proc_read import read_proc
from .proc_waits import EPOLL_WAITS, syscall_names, thread_wait


def epolls_waited(pid: int, tids: Sequence[int]) -> dict[int, int]:
    """tid -> the epoll descriptor it sleeps on now, for those of `tids` asleep in an epoll wait."""
    table = syscall_names()
    found: dict[int, int] = {}
    for tid in tids:
        wait = thread_wait(pid, tid, table, name="")
        if wait.call in EPOLL_WAITS and wait.fd is not None:
            found[tid] = wait.fd
    return found


def epoll_count(pid: int) -> int | None:
    """How many epoll descriptors process `pid` holds (its fd table's anon_inode:[eventpoll]); None where it may
    not be read. Fewer than its threads: some share one, where whichever waits takes what it watches (a Go
    program's netpoller: one epoll for all its threads)."""
    links = read_links(pid)
    return None if links is None else sum(1 for link in links.values() if link == "anon_inode:[eventpoll]")


def watched_inodes(pid: int, epfd: int) -> frozenset[int] | None:
    """The inodes of the files epoll `epfd` of process `pid` watches; None where it is gone, not this user's to
    read, or not an epoll (a descriptor closed and reused)."""
    data = read_proc(f"/proc/{pid}/fdinfo/{epfd}")
    if data is None:
        return None
    text = data.decode("ascii", "replace")
    if "tfd:" not in text and "eventpoll" not in _link(pid, epfd):
        return None  # no target and no epoll: another kind of file
    return frozenset(watch.inode for watch in parse_epoll_fdinfo(text))


def _link(pid: int, fd: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return ""
