"""The kernel's TCP counters (/proc/net/netstat and /proc/net/snmp) and whose they are.

All counters are those of the caller's network namespace: see SHARED_NAMESPACE_NOTE.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

NETSTAT_PATH = "/proc/net/netstat"
SNMP_PATH = "/proc/net/snmp"

#: Counters that tell whether the kernel refused, dropped or migrated connection attempts.
#: ListenOverflows: a SYN or final ACK found the accept queue full. ListenDrops: any drop on a
#: listener (includes the overflows). TCPReqQFullDrop: SYN dropped because the SYN (request)
#: queue was full and syncookies were off. SyncookiesSent: the SYN queue was full and a cookie
#: was answered instead. TCPAbortOnClose: an accepted socket was closed with unread data (RST
#: sent). Closing a listener with connections still in its accept queue also resets them but
#: is NOT counted there. TCPMigrateReq*: requests moved between SO_REUSEPORT listeners when
#: one closes (only with net.ipv4.tcp_migrate_req=1, Linux >= 5.14).
#: Every dropped SYN is counted, retransmissions included, so ListenOverflows counts attempts,
#: not clients. TCPSynRetrans: SYNs (client) and SYN-ACKs (server) sent again after going unanswered,
#: the first 1 s after the original, then 2 s more: a latency tail at 1 s and 3 s (analysis/syn_retrans.py).
WATCHED_COUNTERS: tuple[str, ...] = (
    "TcpExtListenOverflows",
    "TcpExtListenDrops",
    "TcpExtTCPReqQFullDrop",
    "TcpExtSyncookiesSent",
    "TcpExtTCPAbortOnClose",
    "TcpExtTCPMigrateReqSuccess",
    "TcpExtTCPMigrateReqFailure",
    "TcpExtTCPSynRetrans",
)


def parse_netstat(text: str) -> dict[str, int]:
    """Parse ``/proc/net/netstat`` or ``/proc/net/snmp`` text into flat counters.

    The files hold pairs of lines with the same prefix, a header and a value line::

        TcpExt: SyncookiesSent ListenOverflows
        TcpExt: 0 7

    which become ``{"TcpExtSyncookiesSent": 0, "TcpExtListenOverflows": 7}`` (the naming
    ``nstat`` uses). Values may be negative (``TcpMaxConn -1`` in snmp). Raises ValueError
    on malformed text (a header without values, a count mismatch, a non-integer value).
    """
    counters: dict[str, int] = {}
    pending: tuple[str, list[str], int] | None = None  # prefix, names, line number
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        prefix, sep, rest = line.partition(":")
        if not sep or not prefix or " " in prefix:
            raise ValueError(f"line {lineno}: expected 'Prefix: ...', got {raw!r}")
        fields = rest.split()
        if pending is None or pending[0] != prefix:
            if pending is not None:
                raise ValueError(f"line {pending[2]}: header {pending[0]!r} has no value line")
            pending = (prefix, fields, lineno)
            continue
        names = pending[1]
        if len(fields) != len(names):
            raise ValueError(f"line {lineno}: {prefix} has {len(names)} names but {len(fields)} values")
        for name, value in zip(names, fields, strict=True):
            try:
                counters[prefix + name] = int(value)
            except ValueError:
                raise ValueError(f"line {lineno}: {prefix}{name} value {value!r} is not an integer") from None
        pending = None
    if pending is not None:
        raise ValueError(f"line {pending[2]}: header {pending[0]!r} has no value line")
    return counters


def read_netstat(path: str = NETSTAT_PATH) -> dict[str, int]:
    """Read and parse a counters file; ``{}`` if it does not exist (not Linux, no procfs)."""
    try:
        with open(path, encoding="ascii") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    return parse_netstat(text)


def read_counters(paths: Iterable[str] = (NETSTAT_PATH, SNMP_PATH)) -> dict[str, int]:
    """Merge :func:`read_netstat` of several files (default: netstat and snmp)."""
    merged: dict[str, int] = {}
    for path in paths:
        merged.update(read_netstat(path))
    return merged


def or_empty(read: Callable[[], Mapping[str, int]]) -> Callable[[], Mapping[str, int]]:
    """`read`, giving {} where it fails: another network namespace's counters are read through its processes
    (server_netns.netstat_in), which may all be gone since the load began (the server killed, its namespace left
    empty); the load already measured is kept, its counters said not read."""

    def reading() -> Mapping[str, int]:
        try:
            return read()
        except (OSError, ValueError):
            return {}

    return reading


def counter_deltas(
    before: Mapping[str, int], after: Mapping[str, int], names: Iterable[str] = WATCHED_COUNTERS
) -> dict[str, int]:
    """``after - before`` for each name, in the order given; names absent from either side
    (e.g. a counter this kernel does not have) are left out."""
    return {name: after[name] - before[name] for name in names if name in before and name in after}


SHARED_NAMESPACE_NOTE = (
    "Kernel counters (/proc/net/netstat, /proc/net/snmp) are per network namespace, not per "
    "port or process: unless the run had a network namespace to itself they also count any "
    "other TCP traffic in that namespace (on a host without containers: the whole machine)."
)


def in_private_netns() -> bool:
    """Best effort: True if this process's network namespace differs from PID 1's.

    False when they are the same or when it cannot be told (PID 1's namespace unreadable,
    no procfs). Note that inside a container PID 1 is the container's init, so a container
    with its own namespace answers False too: the counters are then the container's, which
    may still carry other traffic.
    """
    try:
        mine = os.stat("/proc/self/ns/net")
        init = os.stat("/proc/1/ns/net")
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) != (init.st_dev, init.st_ino)
