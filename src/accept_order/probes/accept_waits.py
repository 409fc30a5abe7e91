"""Whether a process waits for connections on a listener, and whether a master's children that hold its listener
are per-connection children (socketserver's ForkingMixIn, inetd-style servers) rather than accepting workers.

A child forked after accept() inherits the listener with the rest of its parent's fd table and never waits on it:
the parent accepts every connection and the child serves the one it was forked for, then exits. Holding the
listener does not make it a worker, as it does for nginx's or gunicorn's workers, whose master holds it too but
never waits on it (nginx's sleeps in rt_sigsuspend, gunicorn's in select on its own pipe). Told from /proc:
a thread of the parent asleep waiting on the listener (accept on it; poll or select with it in the set, read from
the process's memory; epoll_wait on an epoll that watches it), and no child waiting on it at the same look.

A child that waits elsewhere is not always serving a connection: uWSGI without a master is a parent that is a worker
too and children that are workers, and under --thunder-lock only the lock's holder waits on the listener while the
others sleep in the lock (seen here: 1 look in 3 found the parent holding it). A per-connection child holds the
connection it was forked for from birth, until it closes it on its way out (running, then); so a child asleep
holding no socket besides the listeners waits its turn to accept, and the parent is no per-connection forker.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

from .fd_table import FdTables, OpenFile, same_file
from .proc_waits import ACCEPTS, EPOLL_WAITS, POLLS, SELECTS, ThreadWait, thread_ids, thread_wait

LOOK_S = 0.5  # how long the parent is looked at for a moment asleep (it forks and accepts between its waits)
LOOK_EVERY_S = 0.005
# looks that must agree: under load uWSGI's lock moves at each request, and at 1 look in 40 (wrk -c16) its parent
# held it while both other workers served a connection
LOOKS = 3
# a thread in these is forking or leaving, not waiting: a forking server's parent, asleep in clone (dup_mmap) as it
# copies its memory for the child of the connection it has just accepted, was first seen 'asleep elsewhere' and taken
# for a master (its per-connection children for workers) at 36 of 60 readings of Python's ForkingMixIn under load;
# a child asleep in exit_group (unlink_anon_vmas), its connection closed and its files not yet, for a worker waiting
# its turn beside a parent that serves (5 readings of 100)
BUSY = frozenset({"clone", "clone3", "fork", "vfork", "exit", "exit_group"})


def waits_on(wait: ThreadWait, files: dict[int, OpenFile], listeners: Collection[int]) -> bool:
    """Whether one thread, asleep now, waits for a connection on one of `listeners` (socket inodes)."""
    if wait.call in ACCEPTS | EPOLL_WAITS and wait.fd is not None and (file := files.get(wait.fd)) is not None:
        if wait.call in ACCEPTS:
            return file.kind == "socket" and file.inode in listeners
        return file.kind == "eventpoll" and bool(file.watching(listeners))
    if wait.call in POLLS | SELECTS and wait.fds is not None:
        return any((file := files.get(fd)) is not None and file.inode in listeners for fd in wait.fds)
    return False


def _waits(pid: int, listeners: Collection[int]) -> tuple[bool, bool, bool, bool]:
    """(every thread asleep, one waits on a listener, it holds a socket besides the listeners, it holds a listener):
    the process's threads now; (False, False, False, False) where it cannot be read."""
    try:
        files = FdTables().files(pid)
    except OSError:
        return False, False, False, False
    waits = [thread_wait(pid, tid, name="") for tid in thread_ids(pid)]
    # a thread whose syscall file this user may not read (Yama's ptrace_scope 1: the same user, not its parent)
    # reads 'unknown' at every look: looked at as asleep, not waited for until the deadline
    asleep = bool(waits) and all((w.asleep and w.call not in BUSY) or w.call == "unknown" for w in waits)
    connected = any(f.kind == "socket" and f.inode not in listeners for f in files.values())
    holds = any(f.kind == "socket" and f.inode in listeners for f in files.values())
    return asleep, any(waits_on(w, files, listeners) for w in waits), connected, holds


def _per_connection(child: int, listeners: Collection[int]) -> bool:
    """Whether a child that holds the listener may be one forked for a connection: it does not wait on the listener,
    and holds another socket (its connection) or is running (closing it to exit). Asleep with the listener alone, it
    waits its turn to accept (in a lock: uWSGI's workers without a master under --thunder-lock). A child that holds
    no listener any more has exited (a zombie its parent has not reaped: its files closed, read as asleep), which a
    per-connection child does once its connection is served: a forking server under load read as a worker beside
    its children (SERVES) at 6 of 40 looks here, its zombies the children that waited their turn."""
    asleep, waiting, connected, holds = _waits(child, listeners)
    return not waiting and (connected or not asleep or not holds)


def _loops(pid: int, listeners: Collection[int]) -> list[int]:
    """The descriptors of the process's epolls that watch a listener; [] where its fd table cannot be read."""
    try:
        files = FdTables().files(pid)
    except OSError:
        return []
    return [fd for fd, file in files.items() if file.kind == "eventpoll" and file.watching(listeners)]


def _own_loop(child: int, parent: int, listeners: Collection[int]) -> bool:
    """Whether the child watches a listener with an epoll of its own, no open file of the parent's (kcmp): a worker's
    loop, which it keeps while it serves a connection (uWSGI's, each made after the fork), where a per-connection
    child has none, or its parent's inherited. uWSGI without --master, its child serving a request of 6 s while the
    parent waited on the listener, read FORKS at 4 looks of 4: the child, a worker, was left out. False where kcmp
    cannot tell."""
    loops = _loops(child, listeners)
    if not loops:
        return False
    theirs = _loops(parent, listeners)
    return any(all(same_file(child, fd, parent, other) is False for other in theirs) for fd in loops)


def _loops_beside(parent: int, children: Sequence[int], listeners: Collection[int]) -> bool:
    """Whether the parent runs an epoll on the listener and a child one of its own beside it: both workers, wherever
    the parent is at the look (serving a request, asleep in uWSGI's --thunder-lock). No master here has one (nginx,
    Apache, gunicorn, uvicorn, uWSGI --master, Puma, Unicorn, Node under SCHED_NONE; Node's primary under SCHED_RR
    does, and its workers hold no listener): uWSGI without --master, its parent serving a 6 s request, was its
    children's master."""
    return bool(_loops(parent, listeners)) and any(_own_loop(child, parent, listeners) for child in children)


# How a parent that holds its children's listener takes connections (parent_accepts)
FORKS = "forks"  # it accepts each one and forks a child to serve it (socketserver's ForkingMixIn)
SERVES = "serves"  # it accepts beside its children, a worker among them (uWSGI without --master: its worker 1)


def parent_accepts(
    parent: int, children: Sequence[int], listeners: Collection[int], look_s: float = LOOK_S
) -> str | None:
    """How `parent`, which holds `listeners` with `children`, takes connections: FORKS where one of its threads is
    seen waiting on a listener and at that look every child may be one forked for a connection (_per_connection),
    at LOOKS looks (or every look where it waited, within `look_s`: under load it forks between its waits); SERVES
    where it is seen waiting on a listener at a look where a child is a worker waiting its turn, or one that runs a
    loop of its own on the listener (uWSGI's parent without --master: it accepts as its children do); None where it
    is first seen asleep elsewhere (nginx's master in rt_sigsuspend), at once, or never seen waiting, unless it runs
    an epoll on the listener beside a child's own (a worker asleep elsewhere: serving, or in uWSGI's --thunder-lock
    while a child holds it): SERVES."""
    deadline = time.monotonic() + look_s
    agreeing = 0
    while True:
        asleep, waiting, _, _ = _waits(parent, listeners)
        if waiting:
            if not all(_per_connection(child, listeners) for child in children) or any(
                _own_loop(child, parent, listeners) for child in children
            ):
                return SERVES
            agreeing += 1
            if agreeing >= LOOKS:
                return FORKS
        elif asleep and not agreeing:
            return SERVES if _loops_beside(parent, children, listeners) else None
        if time.monotonic() > deadline:
            return FORKS if agreeing > 0 else SERVES if _loops_beside(parent, children, listeners) else None
        time.sleep(LOOK_EVERY_S)


def forks_per_connection(
    parent: int, children: Sequence[int], listeners: Collection[int], look_s: float = LOOK_S
) -> bool:
    """Whether `parent` accepts every connection and forks a child for each (parent_accepts: FORKS)."""
    return parent_accepts(parent, children, listeners, look_s) == FORKS
