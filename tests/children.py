"""The test process's children: whether it has any (one waitid), those a module fixture keeps alive on purpose,
and what tests ask of processes (gone, their children from the kernel's lists, their CPU so far). conftest's
no_child_outlives_the_test uses them; tests import them from conftest too."""

from __future__ import annotations

import os
from collections.abc import Iterable

import psutil

# Processes a module- or session-scoped fixture owns and ends itself (tests/cluster.py's sshd): alive between
# that scope's tests by design, so no_child_outlives_the_test does not count them. Their own children still count.
KEPT_BY_FIXTURES: set[int] = set()


def describe(proc: psutil.Process) -> str:
    """A process as a leftover is named: its pid and its command line (its name where that cannot be read)."""
    try:
        cmd = " ".join(proc.cmdline()) or proc.name()
    except psutil.Error:
        cmd = "?"
    return f"pid {proc.pid} ({cmd[:120]})"


def has_children() -> bool:
    """Whether this process has a child (running, stopped or a zombie): one system call, waitid without reaping
    (WNOWAIT), which fails with ECHILD only when there is none. Most tests start none, and then psutil's
    children(recursive=True), which reads every process's stat for its parent (2-15 ms a test with the
    machine's other work), is not needed: a process that is no child of ours is no descendant either (an
    orphan is re-parented to init, or to us if we were a subreaper, and then it is our child)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def gone(pids: Iterable[int]) -> bool:
    """None of these processes is still running (reaped, or at most a zombie)."""
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            pass
    return True


def _child_pids(pid: int) -> list[int]:
    """`pid`'s children from the kernel's own lists (/proc/PID/task/TID/children, one per thread that forked)."""
    found: list[int] = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                found.extend(int(child) for child in f.read().split())
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return found


def child_processes(pid: int | None = None, recursive: bool = False) -> list[psutil.Process]:
    """psutil.Process(pid).children(recursive), in pid order, for a probe that wait_for polls: read from the
    kernel's children lists of `pid` (and theirs), a few files instead of every process's stat (psutil finds
    children by reading the parent of every process on the machine: 6-15 ms a call with the suite beside it,
    13.5 CPU-s in 2,072 polls over 13 files). The kernel does not promise that a list read while children
    exit names every live one, so this is for waiting until something appears, never for asserting that
    nothing is left (psutil's children() for that). No pid: this process; a process gone: no children."""
    root = os.getpid() if pid is None else pid
    if not os.path.exists(f"/proc/{root}/task/{root}/children"):  # a kernel without CONFIG_PROC_CHILDREN
        try:
            return psutil.Process(root).children(recursive=recursive)
        except psutil.NoSuchProcess:
            return []
    found: list[psutil.Process] = []
    parents = [root]
    while parents:
        children: list[int] = []
        for parent in parents:
            try:
                children.extend(_child_pids(parent))
            except FileNotFoundError:  # gone meanwhile
                continue
        # once each: a thread that exits while its list is read hands its children to a thread not yet read
        unique = sorted(set(children))
        for child in unique:
            try:
                found.append(psutil.Process(child))
            except psutil.NoSuchProcess:
                continue
        parents = unique if recursive else []
    return sorted(found, key=lambda p: p.pid)


def cpu_of(pids: Iterable[int]) -> float:
    """CPU seconds (user + system) these processes have used so far; those gone count nothing: how a test
    waits until a load has been driving for a while (there is then a result to keep)."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total
