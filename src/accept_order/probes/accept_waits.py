"""Whether a process waits for connections on a listener, and whether a master's children that hold its listener
are per-connection children (socketserver's ForkingMixIn, inetd-style servers) rather than accepting workers.

A child forked after accept() inherits the listener with the rest of its parent's fd table and never waits on it:
the parent accepts every connection and the child serves the one it was forked for, then exits. Holding the
listener does not make it a worker, as it does for nginx's or gunicorn's workers, whose master holds it too but
never waits on it (nginx's sleeps in rt_sigsuspend, gunicorn's in select on its own pipe). Told from /proc:
a thread of the parent asleep waiting on the listener (accept on it; poll or select with it in the set, read from
the process's memory; epoll_wait on an epoll that watches it), and no child waiting on it at the same look.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

from .fd_table import FdTables, OpenFile
from .proc_waits import ACCEPTS, EPOLL_WAITS, POLLS, SELECTS, ThreadWait, thread_ids, thread_wait

LOOK_S = 0.5  # how long the parent is looked at for a moment asleep (it forks and accepts between its waits)
LOOK_EVERY_S = 0.005


def waits_on(wait: ThreadWait, files: dict[int, OpenFile], listeners: Collection[int]) -> bool:
    """Whether one thread, asleep now, waits for a connection on one of `listeners` (socket inodes)."""
    if wait.call in ACCEPTS | EPOLL_WAITS and wait.fd is not None and (file := files.get(wait.fd)) is not None:
        if wait.call in ACCEPTS:
            return file.kind == "socket" and file.inode in listeners
        return file.kind == "eventpoll" and bool(file.watching(listeners))
    if wait.call in POLLS | SELECTS and wait.fds is not None:
        return any((file := files.get(fd)) is not None and file.inode in listeners for fd in wait.fds)
    return False


def _waits(pid: int, listeners: Collection[int]) -> tuple[bool, bool]:
    """(every thread asleep, one waits on a listener): the process's threads now; (False, False) where it cannot be
    read."""
    try:
        files = FdTables().files(pid)
    except OSError:
        return False, False
    waits = [thread_wait(pid, tid, name="") for tid in thread_ids(pid)]
    asleep = bool(waits) and all(w.asleep for w in waits)
    return asleep, any(waits_on(w, files, listeners) for w in waits)


def forks_per_connection(
    parent: int, children: Sequence[int], listeners: Collection[int], look_s: float = LOOK_S
) -> bool:
    """Whether `parent`, which holds `listeners` with `children`, accepts itself: one of its threads is seen
    waiting on a listener and none of the children at that look. The parent is looked at until its threads are
    all asleep (at most `look_s`: under load it forks between its waits); a parent asleep elsewhere (nginx's
    master in rt_sigsuspend) answers False at once."""
    deadline = time.monotonic() + look_s
    while True:
        asleep, waiting = _waits(parent, listeners)
        if waiting:
            return not any(_waits(child, listeners)[1] for child in children)
        if asleep or time.monotonic() > deadline:
            return False
        time.sleep(LOOK_EVERY_S)
