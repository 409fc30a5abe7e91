"""Where a result was measured."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
from typing import Any

from .cgroup_cpu import cgroup_cpu
from .measures import Environment


def read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def current() -> Environment:
    return Environment(
        system=platform.system(),
        kernel=platform.release(),
        machine=platform.machine(),
        cpu_count=os.cpu_count() or 1,
        somaxconn=read_int("/proc/sys/net/core/somaxconn"),
        python=platform.python_version(),
        hostname=socket.gethostname(),
        started_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    )


def machine_state(cpu_limit: bool = False) -> dict[str, object]:
    """The machine's load average and CPU time split (for steal) now: taken before and after a repeated
    comparison, so its result can say when the machine itself moved under it. With `cpu_limit`, the tool's
    cgroup's CPU limit and throttle too (core/cgroup_cpu.py): read only for the runs whose report says it
    (latency), not on every run's start (a walk of /proc/self/cgroup and cpu.stat files, 0.6 ms here)."""
    state: dict[str, object] = {}
    try:
        state["load_average"] = [round(v, 2) for v in os.getloadavg()]
    except OSError:
        pass
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        state["cpu_jiffies"] = {
            "total": sum(fields),
            "steal": fields[7] if len(fields) > 7 else 0,
            "busy": sum(fields) - idle,  # host-wide: every process's, and interrupts'
        }
    except (OSError, ValueError):
        pass
    limited = cgroup_cpu() if cpu_limit else None
    if limited is not None:  # a CPU limit over this tool (a container's): its throttle is not other processes'
        state["cgroup_cpu"] = limited
    kernel = boot_id()
    if kernel:  # which kernel's /proc/stat this is: a client host reporting the same one shares these CPUs
        state["boot_id"] = kernel
    return state


def boot_id() -> str:
    """This kernel's boot_id ("" unread): the same in every network namespace and container on this machine,
    so a client host that reports it runs on this machine's CPUs (loads/hosts/remote_side.py sends its own).
    A sandbox or VM with a kernel of its own (gVisor, Kata, a guest) has its own, though its CPU time is in
    this /proc/stat: its drivers count as other processes'. Read in a container whose /proc/stat is its own
    (LXCFS), a client host in another container on this kernel matches while its CPU is not in that count."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


USER_HZ = 100  # /proc/stat's unit (ticks per second): 100 on every Linux architecture since 2.6
# Below this many CPU-seconds (all CPUs together) the busy share is too coarse to name: /proc/stat counts
# whole ticks, each CPU's off by up to one at each end (2 CPUs over 2 CPU-seconds: 4 of 200 ticks, ±2%).
MIN_HOST_CPU_S = 2.0


def host_busy(machine: Any) -> tuple[float, float] | None:
    """(share of all CPUs busy, CPU-seconds that passed on all CPUs together) between the `before` and
    `after` states of evidence["machine"]; None when a state lacks the busy count (files before 0.4) or
    the span is too short for ticks to say it (MIN_HOST_CPU_S)."""
    if not isinstance(machine, dict):
        return None
    j0, j1 = (machine.get(k, {}).get("cpu_jiffies") or {} for k in ("before", "after"))
    if "busy" not in j0 or "busy" not in j1 or j1["total"] - j0["total"] < MIN_HOST_CPU_S * USER_HZ:
        return None
    total = j1["total"] - j0["total"]
    return (j1["busy"] - j0["busy"]) / total, total / USER_HZ
