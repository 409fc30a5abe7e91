"""How long a server's threads ran during a run and how long they waited for a CPU while runnable: each thread's
/proc/PID/task/TID/schedstat (time on a CPU, time runnable on a run queue, in ns), read as the run starts and ends.

The latency model takes an attached or launched server's service time from its CPU per connection, and gives each
worker a CPU of its own: nginx attached on 2 CPUs beside the load generator and other processes (load 13) ran 3.36 s
and waited 19.29 s for a CPU in an 11.4 s run, so a connection's 1.1 ms of CPU took ~7 ms, and the model's p50
was 5.3 times under the measured one (experiments/latency/model_check.py stretches it by this reading)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

Times = dict[int, tuple[int, int]]  # thread id -> (ns on a CPU, ns waiting for one), since it started


def thread_times(pids: Sequence[int]) -> Times:
    """Every thread of `pids` (a pid that is one thread of a process: that process's threads) as it is now; a
    process gone, or not this user's to read, adds none."""
    times: Times = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                    run, wait = f.read().split()[:2]
                times[int(tid)] = (int(run), int(wait))
            except (OSError, ValueError):
                continue  # ended meanwhile
    return times


def waited(before: Mapping[int, tuple[int, int]], after: Mapping[int, tuple[int, int]]) -> dict[str, float] | None:
    """Evidence `cpu_waits`: {"run_s": seconds the threads ran, "waited_s": seconds they waited for a CPU} between
    the readings, over the threads in both (one that started or ended between them is left out); None where they
    ran for no time."""
    run = wait = 0
    for tid, (run0, wait0) in before.items():
        if tid in after:
            run1, wait1 = after[tid]
            run, wait = run + max(0, run1 - run0), wait + max(0, wait1 - wait0)
    return {"run_s": round(run / 1e9, 6), "waited_s": round(wait / 1e9, 6)} if run > 0 else None


def cpu_share(evidence: Mapping[str, object]) -> float | None:
    """The share of a CPU the server's threads got while runnable (run / (run + waited)) from evidence `cpu_waits`;
    None where it is absent (a file from before it, a server elsewhere) or does not hold two non-negative numbers."""
    read = evidence.get("cpu_waits")
    if not isinstance(read, Mapping):
        return None
    run, wait = read.get("run_s"), read.get("waited_s")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in (run, wait)):
        return None
    assert isinstance(run, (int, float)) and isinstance(wait, (int, float))
    return run / (run + wait) if run > 0 else None
