"""How long this tool's own cgroup (or a parent) was held off the CPUs by its CPU limit: cgroup v2's cpu.max, or
v1's cpu.cfs_quota_us, as a Kubernetes CPU limit or `docker --cpus` sets. A run so limited waits for a CPU while
the CPUs idle; its report must not blame that wait on other processes. Read from the kernel's cpu.stat
(throttled_usec, v1's throttled_time in ns) at each level from the tool's cgroup up to the hierarchy's root."""

from __future__ import annotations

import os
import re
import time
from typing import Any

SHOWN_MS = 1  # a throttle shorter than this is not worth a sentence
# ... nor one under this share of the span it was read over: 2 ms of a 10 s run beside others using 80% of the CPUs
# did not make the wait the limit's, and saying so took the blame off the others who did
SHOWN_SHARE = 0.05


def _unescaped(field: str) -> str:
    """A mountinfo path as the file system names it: the kernel writes space, tab, newline and backslash as \\ooo
    (a cgroup named 'my app' is mounted at '.../my\\040app')."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _mounts() -> dict[str, tuple[str, str]]:
    """{"2" or "1:cpu": (mount root, mount point)} of the cgroup hierarchies that can hold a CPU limit."""
    try:
        with open("/proc/self/mountinfo") as f:
            return mounts_in(f.read())
    except OSError:
        return {}


def mounts_in(mountinfo: str) -> dict[str, tuple[str, str]]:
    """_mounts of a mountinfo's text."""
    found: dict[str, tuple[str, str]] = {}
    for line in mountinfo.splitlines():
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        if rest[0] == "cgroup2":
            found.setdefault("2", (_unescaped(fields[3]), _unescaped(fields[4])))
        elif rest[0] == "cgroup" and "cpu" in rest[2].split(","):
            found.setdefault("1", (_unescaped(fields[3]), _unescaped(fields[4])))
    return found


def _leaf_dirs() -> list[tuple[str, str]]:
    """[(version, directory of this process's cgroup)] for the hierarchies with the cpu controller."""
    mounts = _mounts()
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    dirs = []
    for line in lines:
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        version = "2" if number == "0" and controllers == "" else "1"
        if version == "1" and "cpu" not in controllers.split(","):
            continue
        if version not in mounts:
            continue
        root, point = mounts[version]
        if root != "/" and path.startswith(root):  # a mount of a sub-tree (a container without a cgroup namespace)
            path = path[len(root) :]
        dirs.append((version, os.path.normpath(os.path.join(point, path.lstrip("/")))))
    return dirs


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _level(version: str, where: str) -> tuple[int, str] | None:
    """(µs throttled so far, its limit 'cpu.max Q/P' or '') of one cgroup; None where it holds no cpu.stat."""
    stat = _read(os.path.join(where, "cpu.stat"))
    if stat is None:
        return None
    values = dict(line.split()[:2] for line in stat.splitlines() if len(line.split()) >= 2)
    if version == "2":
        throttled = int(values.get("throttled_usec", 0))
        limit = (_read(os.path.join(where, "cpu.max")) or "max").split()
        said = f"cpu.max {limit[0]}/{limit[1]}" if len(limit) == 2 and limit[0] != "max" else ""
    else:
        throttled = int(values.get("throttled_time", 0)) // 1000
        quota = (_read(os.path.join(where, "cpu.cfs_quota_us")) or "-1").strip()
        period = (_read(os.path.join(where, "cpu.cfs_period_us")) or "").strip()
        said = f"cpu.cfs_quota_us/period {quota}/{period}" if quota not in ("-1", "") and period else ""
    return throttled, said


def cgroup_cpu() -> dict[str, Any] | None:
    """{"throttled_us": [µs each level was throttled so far, this process's cgroup first], "limit": the
    tightest level's limit, "at_s": when (monotonic)} where a level up to the root has a CPU limit; None where
    none has (or none read)."""
    levels: list[int] = []
    limits: list[str] = []
    for version, leaf in _leaf_dirs():
        where = leaf
        while True:
            try:
                level = _level(version, where)
            except ValueError:
                level = None
            if level is not None:
                levels.append(level[0])
                if level[1]:
                    limits.append(level[1])
            parent = os.path.dirname(where)
            if parent == where or not os.path.exists(os.path.join(parent, "cgroup.procs")):
                break
            where = parent
    if not limits:
        return None
    return {"throttled_us": levels, "limit": min(limits, key=_ratio), "at_s": round(time.monotonic(), 3)}


def _ratio(limit: str) -> float:
    quota, _, period = limit.rpartition(" ")[2].partition("/")
    try:
        return int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return float("inf")


def throttled(before: Any, after: Any) -> tuple[float, str] | None:
    """(ms the run's cgroup was held off the CPUs, its limit) between two cgroup_cpu() readings; None where
    either is missing or they are not of the same levels. A level's throttle holds every cgroup under it, so
    the longest level's is the run's."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    b, a = before.get("throttled_us") or [], after.get("throttled_us") or []
    if len(a) != len(b) or not a:
        return None
    ms = max(x - y for x, y in zip(a, b, strict=True)) / 1000
    return ms, str(after.get("limit") or before.get("limit") or "")


def throttle_sentence(ms: float, span_s: float | None, limit: str) -> str:
    """'this run's cgroup was throttled for 812 ms (summed over the CPUs) in its 1.0 s (cpu.max 20000/100000): its
    CPU limit, not other processes', or '' where the throttle is too short to name (under SHOWN_MS, or under
    SHOWN_SHARE of the span where it is known). The kernel adds each CPU's throttled run queue's time
    (cfs_bandwidth throttled_time), so on 2 CPUs a 2.1 s step read 3403 ms."""
    if ms < SHOWN_MS or (span_s and ms < SHOWN_SHARE * span_s * 1000):
        return ""
    of = f" in its {span_s:.1f} s" if span_s else ""
    said = f"this run's cgroup was throttled for {ms:.0f} ms (summed over the CPUs){of} ({limit})"
    return f"{said}: its CPU limit, not other processes"


def throttled_said(machine: Any) -> str:
    """throttle_sentence between evidence["machine"]'s before and after, or '' (not throttled, limited, read)."""
    if not isinstance(machine, dict):
        return ""
    before, after = (machine.get(k, {}).get("cgroup_cpu") for k in ("before", "after"))
    seen = throttled(before, after)
    if seen is None:
        return ""
    span = after.get("at_s", 0) - before.get("at_s", 0)
    return throttle_sentence(seen[0], span if span > 0 else None, seen[1])
