"""Where a result was measured."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket

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


def machine_state() -> dict[str, object]:
    """The machine's load average and CPU time split (for steal) now: taken before and after a repeated
    comparison, so its result can say when the machine itself moved under it."""
    state: dict[str, object] = {}
    try:
        state["load_average"] = [round(v, 2) for v in os.getloadavg()]
    except OSError:
        pass
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        state["cpu_jiffies"] = {"total": sum(fields), "steal": fields[7] if len(fields) > 7 else 0}
    except (OSError, ValueError):
        pass
    return state
