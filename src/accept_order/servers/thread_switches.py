"""The context switches of every thread of a process, for workers whose threads are not workers themselves (an
attached or observed Puma worker: its main thread sleeps in ppoll throughout, its server and pool threads do the
sleeping that counts; Caddy's Go runtime, Node's libuv pool, gunicorn's gthread pool alike). latency --attach and
observe read them alike (WorkerUsage), so 'slept N times' means the same in both.

/proc/PID/status (and /proc/PID/sched) count the main thread's switches alone; /proc/PID/task/TID/status each
thread's. No file keeps the switches of a thread that has ended: its group's total (signal_struct's nvcsw) is
only getrusage's, for the process itself (checked here: a thread that slept 500 times and ended left
/proc/PID/status and /proc/PID/sched as they were, and the sum over /proc/PID/task fell back by 500). So the
switches are summed thread by thread as increments since the last reading, each thread known by its id and start
time (an id the kernel reuses is another thread): a delta is never negative, and a thread that ends during the
run takes its switches since the last reading with it: an undercount, never a negative delta.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.processes import leads_its_group, process_errors, process_usage, status_switches, usage
from .watched import UsageDeltas, thread_ids

Thread = tuple[int, int]  # (thread id, start time in clock ticks since boot)


def _thread_switches(pid: int, tid: int) -> tuple[Thread, int, int] | None:
    """(the thread, its voluntary switches, its involuntary ones); None when it has ended."""
    base = f"/proc/{pid}/task/{tid}"
    try:
        with open(f"{base}/stat", "rb") as f:
            started = int(f.read().rpartition(b")")[2].split()[19])  # field 22, starttime
        switches = status_switches(f"{base}/status")
    except (OSError, ValueError, IndexError):
        return None
    return None if switches is None else ((tid, started), *switches)


def _leads_its_group(pid: int) -> bool:
    """Whether `pid` is a process, not another of a process's threads (HAProxy's, attached by their ids as its
    workers: then the thread's own switches are its); a process where that cannot be read."""
    try:
        return leads_its_group(pid)
    except (OSError, ValueError, IndexError):
        return True


class WorkerUsage:
    """Each worker's usage so far, as observe and latency --attach both read it: (voluntary switches, involuntary
    ones, CPU seconds). A worker process's switches are every thread's, summed as increments since the last
    reading (module docstring; one reader per run: it remembers each process's threads), and its CPU the process's
    clock, which keeps ended threads'. A worker that is a thread (HAProxy's, h2o's: core/processes.thread_workers)
    keeps its own, the main thread too. A thread that ends loses only its switches since the last reading. The cost
    is two /proc files per thread at each reading: 0.08-0.16 ms of CPU a thread here (2 vCPUs, busy), 60-80 ms for 64
    workers of 8 threads, 0.84 s (1.1 s wall) for 8 workers of 1,000; /proc/PID/status alone took 0.1-0.35 ms a
    worker (review RJ). observe reads them at its ticks only within its sampling budget (sampling.PacedUsage)."""

    def __init__(self) -> None:
        self._seen: dict[int, dict[Thread, tuple[int, int]]] = {}  # pid -> each thread's switches, last read
        self._totals: dict[int, tuple[int, int]] = {}  # pid -> switches summed so far

    def of(self, worker: int, thread: bool = False, threads: bool = True) -> tuple[int, int, float] | None:
        """`worker`'s usage so far; `thread`: it is one thread counted as a worker. `threads` False: its CPU now,
        its switches as last read (its threads are not read again: observe's ticks, where that costs too much).
        None when it is gone or not ours to read."""
        try:
            if thread:
                return usage(worker)  # its own, the main thread's too: /proc/TID is the thread's
            own_v, own_i, cpu_s = process_usage(worker)
        except process_errors(ValueError):
            return None
        if not _leads_its_group(worker):
            return own_v, own_i, cpu_s
        if not threads and worker in self._totals:
            return (*self._totals[worker], cpu_s)
        read = {tid: _thread_switches(worker, tid) for tid in thread_ids(worker)}
        now = {found[0]: found[1:] for found in read.values() if found is not None}
        if not now:
            return None
        last = self._seen.get(worker, {})
        # a thread still listed whose files could not be read this time (out of descriptors: EMFILE) keeps its last
        # figures: dropped, its next reading would be taken from 0 and add its whole life's switches again
        unread = {each: counts for each, counts in last.items() if each[0] in read and read[each[0]] is None}
        voluntary, involuntary = self._totals.get(worker, (0, 0))
        for each, (v, i) in now.items():
            before_v, before_i = last.get(each, (0, 0))
            voluntary, involuntary = voluntary + v - before_v, involuntary + i - before_i
        self._seen[worker], self._totals[worker] = {**unread, **now}, (voluntary, involuntary)
        return voluntary, involuntary, cpu_s


class EveryThreadUsage(UsageDeltas):
    """UsageDeltas read by WorkerUsage: a worker process's switches are every thread's, a thread worker's its own."""

    def __init__(self, pids: Sequence[int]) -> None:
        self._reader = WorkerUsage()
        super().__init__(pids)

    def _usage(self, pid: int) -> tuple[int, int, float] | None:
        return self._reader.of(pid, thread=pid in self.thread_workers)
