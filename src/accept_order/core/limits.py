"""The limits and checks every spec shares (ranges, the open-file limit and local ports a load needs, the CPUs
this process may use, a load's driver): a leaf below core/spec.py, which hands them out as before, so that
core/concurrent_load.py checks a concurrent load without importing spec.py (no import circle).
"""

from __future__ import annotations

import math
import resource
from typing import Any, Literal, get_args

from .cpus import allowed_cpus, format_cpu_list
from .errors import PlanError

MAX_WORKERS = 512
MAX_CONNECTIONS = 10_000_000
MAX_WORK_US = 60_000_000
MAX_WORK_ITERS = 10**10
MAX_ACCEPT_BATCH = 1 << 20
MAX_BACKLOG = 1 << 20
MAX_GAP_MS = 60_000.0
MAX_TIMEOUT_S = 3600.0
MAX_DRIVER_PROCS = 64
MAX_DURATION_S = 24 * 3600.0
DEFAULT_HOST = "127.0.0.1"
DEFAULT_MODE = "epoll"  # nginx's default on Linux: the one users most often meet
# The loop a load generator runs (loads/drivers.py): "auto" is io_uring where it can run, else epoll.
Driver = Literal["auto", "io_uring", "epoll"]
DRIVERS: tuple[Driver, ...] = get_args(Driver)
FD_MARGIN = 32  # descriptors a driver needs besides its connections (epoll, pipes, stdio, imports)


def number(value: float) -> str:
    """10000000 rather than 1e+07: limits are read by people."""
    return str(int(value)) if math.isfinite(value) and float(value).is_integer() else f"{value:g}"


def check_range(name: str, value: Any, low: float, high: float, unit: str = "") -> None:
    """PlanError naming `name` unless low <= value <= high; `unit` ("s", "ms") when the option took a
    duration the user wrote in any unit (`--step 1000h`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PlanError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or not low <= value <= high:
        u = f" {unit}" if unit else ""
        raise PlanError(f"{name} must be between {number(low)}{u} and {number(high)}{u}, got {number(value)}{u}")


def ms_to_us(ms: float, option: str = "--work-ms") -> int:
    """Milliseconds as whole microseconds; PlanError for nan or inf (which have no integer)."""
    if not math.isfinite(ms):
        raise PlanError(f"{option} must be a finite number, got {ms}")
    return int(round(ms * 1000))


PORT_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"


def drivers_under(connections: int, asked: int, limit: int) -> int:
    """Driver processes to hold `connections` at once: `asked`, or as many more as it takes for each one's
    share (and FD_MARGIN of its own files) to fit under the open-file soft limit `limit` (a burst here, a
    client host's share there)."""
    if limit == resource.RLIM_INFINITY:
        return asked
    return max(asked, math.ceil(connections / max(1, limit - FD_MARGIN)))


def open_file_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def local_ports() -> int | None:
    """How many local ports a client may use to one server address (ip_local_port_range), None if unknown."""
    try:
        with open(PORT_RANGE) as f:
            low, high = (int(v) for v in f.read().split())
        return high - low + 1
    except (OSError, ValueError):
        return None


def check_concurrency(concurrency: int, option: str = "--concurrency", driver_procs: int = 1) -> None:
    """PlanError unless `concurrency` open connections, shared by `driver_procs` processes, fit under the
    open-file limit (ulimit -n; per driver: each process has a descriptor table of its own) and the local
    port range (each open connection holds a local port to the one server address). `option`: the option
    the user gave the number with."""
    limit = open_file_limit()
    allowed = max(1, limit - FD_MARGIN) * driver_procs
    if not 1 <= concurrency <= allowed:
        per = f", times {driver_procs} driver processes" if driver_procs > 1 else ""
        raise PlanError(
            f"{option} must be between 1 and {allowed} (open-file limit {limit} minus {FD_MARGIN} "
            f"for a driver's own files{per}; raise it with ulimit -n, or give more --driver-procs), got {concurrency}"
        )
    ports = local_ports()
    if ports is not None and concurrency > ports:
        raise PlanError(
            f"{option} {concurrency}: one client address has {ports} local ports to one server address "
            f"(net.ipv4.ip_local_port_range); use at most {ports}"
        )


def ran_at_once(connections: Any, concurrency: Any) -> Any:
    """The concurrency a load of `connections` ran at: no more than them, whatever -c said, as each opens with one of
    them (with K != 1 its first request, a pool's fill too): '-n 20' beside -c 200 had 20 open at most. Anything
    else as given: a duration run (None), values a file should not hold (left to its checks)."""
    if isinstance(connections, int) and isinstance(concurrency, int) and 0 < connections < concurrency:
        return connections
    return concurrency


def check_cpus(cpus: tuple[int, ...], option: str = "--cpus") -> None:
    """Refuse CPUs this process may not run on here, before a worker (or driver) fails to pin itself to one."""
    allowed = allowed_cpus()
    foreign = sorted(set(cpus) - set(allowed))
    if foreign and allowed:
        raise PlanError(
            f"{option}: CPU {format_cpu_list(foreign)} not available here (allowed: {format_cpu_list(allowed)})"
        )


def check_driver(driver: Any) -> None:
    if driver not in DRIVERS:
        raise PlanError(f"--driver must be one of {', '.join(DRIVERS)}, got {driver!r}")


DEFAULT_REQUESTS = 100_000
DEFAULT_CONCURRENCY = 200
DEFAULT_DRIVER_PROCS = 2
