"""Looking at a process's network namespace from outside it: the settings and counters that bear on its
listeners, and running a question (a netlink dump) inside that namespace.

/proc/PID/net/* already shows the process's own namespace (its tcp tables, its netstat counters). The
sysctls under /proc/sys/net and a netlink socket belong to the namespace of the thread that opens them,
so for a server in another namespace they are read by a short-lived thread that setns(2) into it (the
rest of this process stays where it is). setns needs CAP_SYS_ADMIN: without it they stay unknown.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from ..core.capabilities import ADMIN, what_would_let_it
from ..core.libc import libc
from ..core.signal_order import start_thread
from .netstat import parse_netstat

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
SYSCTLS: tuple[str, ...] = (
    "net/core/somaxconn",
    "net/ipv4/tcp_max_syn_backlog",
    "net/ipv4/tcp_syncookies",
    "net/ipv4/tcp_migrate_req",
)
COUNTERS: tuple[str, ...] = ("TcpExtListenOverflows", "TcpExtListenDrops", "TcpExtTCPReqQFullDrop")


def namespace_of(pid: int | str) -> int | None:
    """The inode of the process's network namespace (None: gone, or not ours to look at)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def same_namespace(pid: int) -> bool:
    theirs = namespace_of(pid)
    return theirs is None or theirs == namespace_of("self")


def entry_refused() -> str:
    """Why the server's network namespace was not entered, and what would let this tool in."""
    return f"the server's network namespace may not be entered (setns needs CAP_SYS_ADMIN: {what_would_let_it(ADMIN)})"


def in_namespace_of(pid: int, question: Callable[[], T]) -> T:
    """`question()` asked from inside `pid`'s network namespace: here when it is ours, else in a thread
    that enters it first. PermissionError when this process may not enter it."""
    if same_namespace(pid):
        return question()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def enter_and_ask() -> None:
        try:
            fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            try:
                if libc().setns(fd, CLONE_NEWNET) != 0:
                    code = ctypes.get_errno()
                    raise PermissionError(code, f"setns into pid {pid}'s network namespace: {os.strerror(code)}")
            finally:
                os.close(fd)
            outcome.append(question())
        except BaseException as exc:  # carried to the caller's thread
            failure.append(exc)

    start_thread(enter_and_ask, "accept-order-netns").join()
    if failure:
        raise failure[0]
    return outcome[0]


def _sysctls() -> dict[str, int | None]:
    values: dict[str, int | None] = {}
    for name in SYSCTLS:
        try:
            with open(f"/proc/sys/{name}", encoding="ascii") as f:
                values[name.rpartition("/")[2]] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            values[name.rpartition("/")[2]] = None  # an older kernel without it (tcp_migrate_req: 5.14)
    return values


def sysctls_of(pid: int) -> dict[str, int | None]:
    """somaxconn, tcp_max_syn_backlog, tcp_syncookies, tcp_migrate_req as the server's namespace has
    them; every value None when that namespace may not be entered."""
    try:
        return in_namespace_of(pid, _sysctls)
    except OSError:
        return {name.rpartition("/")[2]: None for name in SYSCTLS}


def netstat_of(pid: int) -> dict[str, int]:
    """Every counter of `pid`'s network namespace (/proc/PID/net/netstat, which procfs gives as PID's namespace's):
    read without entering it, and without ptrace access to PID (nobody reads root's). OSError or ValueError where
    it cannot be read."""
    with open(f"/proc/{pid}/net/netstat", encoding="ascii") as f:
        return parse_netstat(f.read())


def netstat_snmp_of(pid: int) -> dict[str, int]:
    """netstat and snmp of `pid`'s network namespace, as netstat.read_counters reads ours: a --target's in another
    namespace of this machine (servers/remote.py). OSError or ValueError where they cannot be read."""
    counters = netstat_of(pid)
    with open(f"/proc/{pid}/net/snmp", encoding="ascii") as f:
        counters.update(parse_netstat(f.read()))
    return counters


def netstat_namespace(pid: int | str) -> int | None:
    """Which network namespace `pid` is in, as far as its counters go: the inode of its /proc/PID/net/netstat, which
    procfs makes once per namespace (the same for two processes of one namespace, another for one of another:
    'unshare -n' gave 4026532206 against 4026531914 here). Readable where /proc/PID/ns/net is not (that needs ptrace
    access: as nobody, root's is refused). None where PID is gone or the file cannot be looked at."""
    try:
        return os.stat(f"/proc/{pid}/net/netstat").st_ino
    except OSError:
        return None


def namespaces() -> dict[int, list[int]]:
    """Every network namespace with a process this tool may look at, ours too: its netstat inode
    (netstat_namespace) and the pids in it, in /proc's order."""
    seen: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (inode := netstat_namespace(name)) is not None:
            seen.setdefault(inode, []).append(int(name))
    return seen


def netstat_in(
    namespace: int, pids: Sequence[int], read_of: Callable[[int], Mapping[str, int]] = netstat_of
) -> Mapping[str, int]:
    """The counters of the namespace whose netstat inode (netstat_namespace) is `namespace`, read through the first
    of `pids` still in it: a worker that exited mid-run (or whose pid went to another process) no longer shows them,
    and its fellows do. The last error (OSError) where none could be read."""
    failed: OSError = ProcessLookupError(f"none of pids {', '.join(map(str, pids))} is left in the namespace")
    for pid in pids:
        if netstat_namespace(pid) != namespace:
            continue
        try:
            return read_of(pid)
        except OSError as exc:  # gone between the two looks, or refused
            failed = exc
    raise failed


def counters_of(pid: int) -> dict[str, int]:
    """The listen-queue counters of the server's namespace since it was made ({} when unreadable)."""
    try:
        counters = netstat_of(pid)
    except (OSError, ValueError):
        return {}
    return {name: counters[name] for name in COUNTERS if name in counters}
