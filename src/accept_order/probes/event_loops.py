"""Which threads of a process run an event loop: the threads that wait in epoll, as /proc/TID/syscall shows them.

h2o serves with num-threads event loops, a thread each, beside a thread that serves none (h2o 2.2's, asleep in
clock_nanosleep throughout); its loops are its workers (ServerKind.loops_are_workers). Threads share one fd table,
so no file says which epoll a thread owns; what a thread waits in does: a loop between events sleeps in
epoll_wait (or epoll_pwait, epoll_pwait2). A loop busy at one look is asleep in epoll at another, so the threads
are looked at until each has been seen asleep in epoll, or in a wait no loop sleeps in (NOT_A_LOOPS: a timer's, a
lock's, a signal's, another descriptor's) at OTHER_LOOKS looks, or for at most LOOK_S. A loop also blocks in calls
of its own (a file's read or write off a slow disk, a page fault), which say nothing either way: a loop serving
cold files was seen in them at 3 looks and taken for no loop. At LOOK_S, a thread never seen in a wait of
NOT_A_LOOPS ran or did its own I/O throughout: it is serving, so it is counted a loop.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from .proc_waits import thread_wait

EPOLL_WAITS = frozenset({"epoll_wait", "epoll_pwait", "epoll_pwait2"})
LOOK_S = 1.0  # a loop under load is asleep in epoll within milliseconds; a second is ample on a busy machine
EVERY_S = 0.005  # between looks at every thread (a look reads two small files a thread)
OTHER_LOOKS = 3  # a thread seen in a wait of NOT_A_LOOPS at this many looks, never in epoll, runs no loop
# Sleeps of a thread that waits for something other than its loop's events: time (h2o 2.2's timer thread, in
# clock_nanosleep throughout), a lock or condition (futex), a signal, a child, a descriptor of its own outside epoll.
# Not `read` (a loop reads files) nor a call the table does not name ("?": write, pread64, sendfile, openat).
NOT_A_LOOPS = frozenset(
    {
        "nanosleep",
        "clock_nanosleep",
        "futex",
        "futex_waitv",
        "pause",
        "rt_sigsuspend",
        "rt_sigtimedwait",
        "wait4",
        "waitid",
        "poll",
        "ppoll",
        "select",
        "pselect6",
        "accept",
        "accept4",
        "recvfrom",
        "recvmsg",
        "recvmmsg",
        "io_uring_enter",
    }
)


def loop_threads(pid: int, tids: Sequence[int], look_s: float = LOOK_S) -> tuple[int, ...]:
    """Those of `tids` (threads of process `pid`) that run an event loop: seen asleep in an epoll wait, or never
    seen in a wait of NOT_A_LOOPS within `look_s` (it ran, or blocked in its own I/O); a thread seen in one of those
    at OTHER_LOOKS looks, and never in epoll (a timer's sleep), is none. In the order given. A thread gone meanwhile,
    or not this user's to look at, is left out."""
    loops: set[int] = set()
    elsewhere: dict[int, int] = {}  # thread -> looks that saw it asleep in a wait of NOT_A_LOOPS
    unseen: set[int] = set()  # gone, or not this user's to look at: /proc would not say
    deadline = time.monotonic() + look_s
    while True:
        for tid in tids:
            if tid in loops or tid in unseen or elsewhere.get(tid, 0) >= OTHER_LOOKS:
                continue
            wait = thread_wait(pid, tid)
            if wait.call == "unknown":
                unseen.add(tid)
            elif wait.call in EPOLL_WAITS:
                loops.add(tid)
            elif wait.call in NOT_A_LOOPS:
                elsewhere[tid] = elsewhere.get(tid, 0) + 1
        undecided = [t for t in tids if t not in loops and t not in unseen and elsewhere.get(t, 0) < OTHER_LOOKS]
        if not undecided:
            break
        if time.monotonic() >= deadline:
            # never seen in a wait of NOT_A_LOOPS: it ran, or did its own I/O, throughout: serving
            loops.update(t for t in undecided if elsewhere.get(t, 0) == 0)
            break
        time.sleep(EVERY_S)
    return tuple(tid for tid in tids if tid in loops)
