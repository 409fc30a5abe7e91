"""Where a result was measured."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket

from .results.records import Environment


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
