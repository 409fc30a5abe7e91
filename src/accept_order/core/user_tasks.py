"""Whether this user may start `more` processes under `ulimit -u` (RLIMIT_NPROC), before a server is launched.

The kernel counts every task (process or thread) of a real uid against it, and refuses a fork over it with EAGAIN,
root aside (uid 0, or CAP_SYS_RESOURCE or CAP_SYS_ADMIN). A launched server's master that cannot fork its workers
fails its own way: nginx logged 'fork() failed while spawning "worker process" (11: Resource temporarily
unavailable)' and this tool waited 30 s for workers that never came ('not ready within 30 s'); gunicorn exited
naming only 'Unhandled exception in main loop'. On a shared host a user's limit is often set low.
"""

from __future__ import annotations

import os
import resource

from .capabilities import ADMIN, RESOURCE, holds

LOADAVG = "/proc/loadavg"  # its fourth field, 'running/total', counts every task on the machine


def _tasks_on_the_machine() -> int | None:
    try:
        with open(LOADAVG, encoding="ascii") as f:
            return int(f.read().split()[3].partition("/")[2])
    except (OSError, ValueError, IndexError):
        return None


def _tasks_of(uid: int) -> int:
    """The tasks whose real uid is `uid` that /proc shows (under hidepid, this user's own are shown)."""
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as f:
                real = next((line.split()[1] for line in f if line.startswith("Uid:")), None)
            if real is not None and int(real) == uid:
                count += len(os.listdir(f"/proc/{name}/task"))
        except (OSError, ValueError, IndexError):
            continue  # ended since the listing, or not ours to read
    return count


def too_many_tasks(more: int, what: str) -> str | None:
    """The line for `what` (`more` processes at least) that would not fit under this user's `ulimit -u`; None
    where they fit, where the limit does not hold this process, or where it cannot be told. The machine's own
    task count is read first (one file): only when it could reach the limit are this user's tasks counted."""
    soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if soft == resource.RLIM_INFINITY or os.getuid() == 0 or holds(RESOURCE) or holds(ADMIN):
        return None
    total = _tasks_on_the_machine()
    if total is not None and total + more <= soft:
        return None
    mine = _tasks_of(os.getuid())
    if mine + more <= soft:
        return None
    return (
        f"{what} would not fit under this user's process limit: the user runs {mine} processes and threads already, "
        f"of the {soft} `ulimit -u` allows (raise it, or give fewer --workers)"
    )
