"""An attached master still starting its workers: it listens first and forks them one by one (gunicorn sleeps up
to 0.1 s between two, and its pre_fork hook may take longer), or spawns them and they take the listener a moment
later, so a reading taken in between finds the master alone holding the listener and reads it as its own one
worker, or finds some of its workers and not the others (seen here 0.4-1.4 s after a start, on a busy machine).

`settled_workers` waits, bounded by STARTING_S, while that can be what is seen: the master is younger than
STARTING_S and the reading (its serving children, whether it holds the listener) has not stayed the same for
SETTLE_S, or one of its children younger than STARTING_S neither holds the listener nor is fed by the master, nor
is a helper (a kind's named helper, Python's multiprocessing resource tracker). A master older than STARTING_S
whose children all serve is read at once, as before; a process that serves alone is its own worker, as before
(servers/attached.py), once the reading has settled.
"""

from __future__ import annotations

import time
from collections.abc import Callable

STARTING_S = 5.0  # a master (or child) this young may still be starting its workers (or be one, importing its app)
SETTLE_S = 1.0  # a young master's reading that stays the same this long is its workers' (gunicorn: 0.1 s apart)
POLL_S = 0.1  # a reading costs ~4 ms of CPU (the holders of the listener, each child's title): 10 a second
# a child of Python's multiprocessing that never serves (uvicorn's, hypercorn's supervisor under spawn)
TRACKER = "multiprocessing.resource_tracker"


def age_s(pid: int) -> float | None:
    """Seconds since the process started (psutil's create time), None when it is gone."""
    import psutil

    try:
        return max(0.0, time.time() - psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def children_of(master: int) -> list[int]:
    """The master's children, oldest first; [] once it is gone. From the kernel's children lists (probes/children.py:
    psutil's children() reads every process's stat, 6-15 ms a call, most of a young master's wait's CPU)."""
    import psutil

    from ..probes.children import children

    try:
        return [p.pid for p in sorted(children(psutil.Process(master)), key=lambda p: (p.create_time(), p.pid))]
    except psutil.Error:
        return []


def starting(
    master: int, children: list[int], engaged: set[int], master_holds: bool, helper: Callable[[int], bool]
) -> bool:
    """Whether one of the master's children may be a worker that has not yet taken the listener: younger than
    STARTING_S, neither holding it nor fed, no helper, while the master holds the listener."""
    if not master_holds:
        return False
    others = [pid for pid in children if pid not in engaged and not helper(pid) and not _tracker(pid)]
    return any((age_s(pid) or STARTING_S) < STARTING_S for pid in others)


_SETTLED: set[tuple[int, float]] = set()  # (pid, start time) of the young masters whose reading settled


def _born(pid: int) -> tuple[int, float] | None:
    """A process as itself: its pid and start time (a pid reused later is another process); None when gone."""
    import psutil

    try:
        return pid, psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _tracker(pid: int) -> bool:
    from ..probes.serving import process_info

    info = process_info(pid)
    return info is not None and TRACKER in " ".join(info.argv)


def settled_workers(
    master: int,
    read: Callable[[list[int]], tuple[list[int], bool, set[int]]],
    helper: Callable[[int], bool],
    limit_s: float = STARTING_S,
) -> list[int]:
    """The master's serving children once it is not starting (at most `limit_s` from now). `read(children)`: the
    children that serve, whether the master holds the listener, and the children that hold it or are fed by the
    master (attached_workers._serving's reading)."""
    deadline = time.monotonic() + limit_s
    born = _born(master)
    # settled once in this process (the command line's reading, then the attached server's start): not again
    young = (age_s(master) or STARTING_S) < STARTING_S and born not in _SETTLED
    last: tuple[tuple[int, ...], bool] | None = None
    since = time.monotonic()
    while True:
        children = children_of(master)
        serving, master_holds, engaged = read(children)
        now = time.monotonic()
        if (tuple(serving), master_holds) != last:
            last, since = (tuple(serving), master_holds), now
        unsettled = young and now - since < SETTLE_S
        if now >= deadline or not (unsettled or starting(master, children, engaged, master_holds, helper)):
            if young and born is not None:
                _SETTLED.add(born)
            return serving
        time.sleep(POLL_S)
