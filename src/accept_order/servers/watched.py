"""Workers this tool did not fork (nginx's, an attached server's): their state and usage, from /proc.

The built-in pool knows its workers' state from shared memory; for anyone else's workers, /proc is what
there is: `S` (asleep, e.g. in epoll_wait) means idle, and the kernel's counters give what each did.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.processes import process_errors, process_usage, thread_workers, usage

if TYPE_CHECKING:  # imported where counters are made: `inspect` imports every kind, and this module (issue 30)
    from ..core.measures import WorkerCounters


def proc_state(pid: int) -> str:
    """The process's state letter (`S`, `R`, `Z`, ...); `X` when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0]
    except OSError:
        return "X"


def gone(pid: int) -> bool:
    return proc_state(pid) in ("X", "Z")


class UsageDeltas:
    """Context switches and CPU of each worker between construction and `counters()`."""

    def __init__(self, pids: Sequence[int]) -> None:
        self.pids = list(pids)
        # threads counted as workers (HAProxy's, h2o's loops), each charged its own CPU: the main thread's id read as a
        # process gave it every thread's, HAProxy's thread 0 0.94 CPU-s beside 0.19 for each of three others
        self.thread_workers = thread_workers(self.pids)
        self._before = {pid: self._usage(pid) for pid in self.pids}

    def _usage(self, pid: int) -> tuple[int, int, float] | None:
        try:
            if pid in self.thread_workers:
                return usage(pid)  # a thread counted as a worker: its own, the main thread's too
            return process_usage(pid)  # every thread's CPU: a worker not ours may work in threads (Puma's)
        except process_errors(ValueError):
            return None  # gone (an attached worker that exited mid-run), or not ours to read

    def counters(self) -> list[WorkerCounters]:
        """One WorkerCounters per worker; what only the worker itself could count (wakeups, accepts,
        empty wakeups, batch) is None: not known."""
        from ..core.measures import WorkerCounters

        counters = []
        for index, pid in enumerate(self.pids):
            b, a = self._before.get(pid), self._usage(pid)
            try:
                cpus: tuple[int, ...] = tuple(sorted(os.sched_getaffinity(pid)))
            except OSError:
                cpus = ()
            counters.append(
                WorkerCounters(
                    index,
                    pid,
                    wakeups=None,
                    accepts=None,
                    empty=None,
                    max_batch=None,
                    voluntary_switches=None if a is None or b is None else a[0] - b[0],
                    involuntary_switches=None if a is None or b is None else a[1] - b[1],
                    cpu_s=None if a is None or b is None else round(a[2] - b[2], 6),
                    affinity=cpus,
                )
            )
        return counters


def thread_ids(pid: int) -> list[int]:
    """The threads of process `pid` ([] once it is gone)."""
    try:
        return sorted(int(tid) for tid in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


class ThreadedUsage(UsageDeltas):
    """For workers that are processes of several threads (Puma's, Caddy's): the context switches of the one
    thread that waits for connections where `threads` names it (its wakeups), else of every thread; the CPU
    of every thread, those that ended during the run too (the process's CPU clock: a sum over the threads
    still there lost a Puma pool thread trimmed mid-run, and a delta could go below zero). /proc/PID/status
    and schedstat are the main thread's alone, which in these servers sleeps throughout."""

    def __init__(self, pids: Sequence[int], threads: dict[int, int] | None = None) -> None:
        self.threads = dict(threads or {})
        super().__init__(pids)

    def _usage(self, pid: int) -> tuple[int, int, float] | None:
        tids = thread_ids(pid)
        if not tids:
            return None
        waiter = self.threads.get(pid)
        voluntary = involuntary = 0
        try:
            cpu_s = process_usage(pid)[2]
        except process_errors(ValueError):
            return None  # gone since
        for tid in tids:
            try:
                v, i, _ = usage(tid)  # /proc/TID/... is the thread's own
            except process_errors(ValueError):
                continue  # a thread that just ended
            if waiter is None or tid == waiter:
                voluntary, involuntary = voluntary + v, involuntary + i
        return voluntary, involuntary, cpu_s
