"""CPU of process trees by role, sampled from /proc by a thread (bench_clients.py's instrument).

Each sample walks the trees from their roots through /proc/PID/task/*/children (the kernel's own list: a
multithreaded parent's children are under the thread that forked them, execnet's ssh under a pool thread) and
reads each of its threads' CPU time from /proc/PID/task/TID/schedstat (nanoseconds run: /proc/PID/stat's utime and
stime move in 10 ms ticks, too coarse for a channel that costs a few ms a second). A process is counted under the
role `classify` gives it when first seen under its name (an exec renames it, and it is classified again: sshd's
child becomes the remote Python); each thread keeps its last reading after it exits, so a role's total never goes
down (a thread that started and ended between two samples is missed: none of the processes measured here does
that during a load). A walk is a few dozen small reads: no scan of every process.
"""

from __future__ import annotations

import glob
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Stat:
    pid: int
    name: str  # comm: python, ssh, sshd
    ppid: int
    start_ticks: int  # since boot: the process's start time, in clock ticks


def read_stat(pid: int) -> Stat | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None  # gone
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()  # from the state on: comm may hold spaces and parentheses
    return Stat(pid, name, int(fields[1]), int(fields[19]))


def threads_cpu(pid: int) -> dict[int, float]:
    """CPU seconds each live thread of the process has run (user and system), by thread id."""
    found: dict[int, float] = {}
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                found[int(path.split("/")[4])] = int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            pass  # the thread ended meanwhile
    return found


def children(pid: int) -> list[int]:
    found: list[int] = []
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(path) as f:
                found += [int(child) for child in f.read().split()]
        except OSError:
            pass  # the thread or the process ended meanwhile
    return found


# (the root's role, the process seen, its parent's Stat or None at a root) -> its role, or None: not counted
Classify = Callable[[str, Stat, "Stat | None"], "str | None"]


class CpuSampler:
    """`with CpuSampler({pid: role}, classify, every_s) as s:` samples until the block ends; then `s.samples` is
    [(time.monotonic(), {role: CPU seconds so far})] and `s.started[role]` the start ticks of its processes."""

    def __init__(self, roots: dict[int, str], classify: Classify, every_s: float) -> None:
        self.roots = roots
        self.classify = classify
        self.every_s = every_s
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.started: dict[str, list[int]] = {}
        # by (pid, start, comm): an exec keeps the pid and the start time (sshd's child becomes the remote Python)
        self._roles: dict[tuple[int, int, str], str] = {}
        self._last: dict[tuple[int, int, str, int], tuple[str, float]] = {}  # ... and the thread: (role, last read)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def __enter__(self) -> CpuSampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()

    def sample(self) -> None:
        for root, role in self.roots.items():
            self._walk(root, role, None)
        totals: dict[str, float] = {}
        for role, cpu in self._last.values():
            totals[role] = totals.get(role, 0.0) + cpu
        self.samples.append((time.monotonic(), totals))

    def _walk(self, pid: int, root_role: str, parent: Stat | None) -> None:
        stat = read_stat(pid)
        if stat is None:
            return
        key = (pid, stat.start_ticks, stat.name)
        if key not in self._roles:
            role = self.classify(root_role, stat, parent)
            self._roles[key] = role or ""
            if role:
                self.started.setdefault(role, []).append(stat.start_ticks)
        role = self._roles[key]
        if role:
            for tid, cpu in threads_cpu(pid).items():
                self._last[(*key, tid)] = (role, cpu)
        for child in children(pid):
            self._walk(child, root_role, stat)

    def at(self, index: int, role: str) -> float:
        return self.samples[index][1].get(role, 0.0)
