"""The context switches of every thread of a process, for workers whose threads are not workers themselves (an
attached Puma worker: its main thread sleeps in ppoll throughout, its server and pool threads do the sleeping
that counts).

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

from ..core.processes import leads_its_group, process_errors, process_usage
from .watched import UsageDeltas, thread_ids

Thread = tuple[int, int]  # (thread id, start time in clock ticks since boot)


def _thread_switches(pid: int, tid: int) -> tuple[Thread, int, int] | None:
    """(the thread, its voluntary switches, its involuntary ones); None when it has ended."""
    base = f"/proc/{pid}/task/{tid}"
    try:
        with open(f"{base}/stat", "rb") as f:
            started = int(f.read().rpartition(b")")[2].split()[19])  # field 22, starttime
        voluntary = involuntary = None
        with open(f"{base}/status", "rb") as f:
            for line in f:
                if line.startswith(b"voluntary_ctxt_switches:"):
                    voluntary = int(line.split()[1])
                elif line.startswith(b"nonvoluntary_ctxt_switches:"):
                    involuntary = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    if voluntary is None or involuntary is None:
        return None
    return (tid, started), voluntary, involuntary


def _leads_its_group(pid: int) -> bool:
    """Whether `pid` is a process, not another of a process's threads (HAProxy's, attached by their ids as its
    workers: then the thread's own switches are its); a process where that cannot be read."""
    try:
        return leads_its_group(pid)
    except (OSError, ValueError, IndexError):
        return True


class EveryThreadUsage(UsageDeltas):
    """UsageDeltas whose switches are every thread's of each worker process, as increments (module docstring);
    a worker that is a thread keeps its own. The CPU is the process's clock, which keeps ended threads'."""

    def __init__(self, pids: Sequence[int]) -> None:
        self._seen: dict[int, dict[Thread, tuple[int, int]]] = {}  # pid -> each thread's switches, last read
        self._totals: dict[int, tuple[int, int]] = {}  # pid -> switches summed so far
        super().__init__(pids)

    def _usage(self, pid: int) -> tuple[int, int, float] | None:
        if pid in self.thread_workers:
            return super()._usage(pid)  # one of a process's threads counted as workers, its main one too: its own
        try:
            own_v, own_i, cpu_s = process_usage(pid)
        except process_errors(ValueError):
            return None  # gone, or not ours to read
        if not _leads_its_group(pid):
            return own_v, own_i, cpu_s
        now = {found[0]: found[1:] for tid in thread_ids(pid) if (found := _thread_switches(pid, tid)) is not None}
        if not now:
            return None
        last = self._seen.get(pid)
        voluntary, involuntary = self._totals.get(pid, (0, 0))
        for thread, (v, i) in now.items():
            before_v, before_i = last.get(thread, (0, 0)) if last is not None else (0, 0)
            voluntary, involuntary = voluntary + v - before_v, involuntary + i - before_i
        self._seen[pid], self._totals[pid] = now, (voluntary, involuntary)
        return voluntary, involuntary, cpu_s
