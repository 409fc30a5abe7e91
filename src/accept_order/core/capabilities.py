"""What would let this tool do what the kernel refused it, said by who it runs as and what it may do.

Root is not enough, and not always needed: a container's root lacks CAP_SYS_PTRACE (every readlink of another
user's /proc/PID/fd fails) or CAP_SYS_RESOURCE (Docker drops it), and root holding every capability is still
refused what the kernel keeps from it: here, in a 6.18 sandbox, pid 1's fd links, maps and ptrace itself fail for
root holding CAP_SYS_PTRACE (a process of ours made non-dumpable still reads), and so does every process outside
a user namespace root made with `unshare -Ur` (all its capabilities are that namespace's). Telling such a root to
"run as root" sends it nowhere; this says which of the three it is.
"""

from __future__ import annotations

import os
from typing import NamedTuple

STATUS = "/proc/self/status"
UID_MAP = "/proc/self/uid_map"  # how this process's user namespace maps its uids to the kernel's
INITIAL_UID_MAP = ["0", "0", "4294967295"]  # the initial namespace's: every uid is its own
SERVERS_USER = "the server's user"  # who else may read a server's processes (`or_as`)


class Capability(NamedTuple):  # a tuple, not a dataclass: made at every start-up (tests/test_startup_records.py)
    name: str
    bit: int  # its bit in CapEff (linux/capability.h)
    kept: str  # what the kernel still refuses a process holding it, as said to the user


PTRACE = Capability(
    "CAP_SYS_PTRACE", 19, "a process the kernel keeps from ptrace, such as another user namespace's or a sandbox's init"
)
ADMIN = Capability(
    "CAP_SYS_ADMIN", 21, "a namespace the kernel keeps from this process, such as another user namespace's"
)
RESOURCE = Capability("CAP_SYS_RESOURCE", 24, "this process may raise it, yet bpftrace's stayed low")
# a port below net.ipv4.ip_unprivileged_port_start (1024)
NET_BIND_SERVICE = Capability("CAP_NET_BIND_SERVICE", 10, "a security module or a cgroup's BPF program refused it")
# loading a tracing program: both of these (Linux 5.8+), or ADMIN
PERFMON = Capability("CAP_PERFMON", 38, "a program the kernel keeps from loading, under lockdown or a security module")
BPF = Capability("CAP_BPF", 39, PERFMON.kept)


def effective_capabilities() -> int:
    """This process's effective capability set (CapEff, a bit per capability). Where /proc does not say (it
    always does on Linux), root is taken to hold every one and any other user none: what was said before
    capabilities were read ('run as root' to a user)."""
    try:
        with open(STATUS) as f:
            return next(int(line.split()[1], 16) for line in f if line.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return ~0 if os.geteuid() == 0 else 0


def in_user_namespace() -> bool:
    """Whether this process is in a user namespace other than the initial one (`unshare -Ur`, a rootless
    container): CapEff then names that namespace's capabilities, and what the kernel grants only to the initial
    one's (loading a BPF program, raising a hard limit) it refuses whatever CapEff says. False where /proc does not
    say."""
    try:
        with open(UID_MAP, encoding="ascii") as lines:
            ranges = [line.split() for line in lines if line.strip()]
    except OSError:
        return False
    return ranges != [INITIAL_UID_MAP]


def holds(needs: Capability) -> bool:
    """Whether this process holds `needs` now (root or not: a non-root may hold one through file capabilities)."""
    return bool(effective_capabilities() >> needs.bit & 1)


def what_would_let_it(needs: Capability = PTRACE, or_as: str = "", otherwise: str = "") -> str:
    """What to say to a user refused something `needs` grants: 'run as root' only to a non-root lacking it;
    'this root lacks CAP_…' to root lacking it; to whoever holds it, what the kernel keeps even from it.
    `or_as`: who else may (`its user`); `otherwise`: what else would do (`raise \\`ulimit -l\\``)."""
    if holds(needs):
        said = needs.kept
    elif os.geteuid() == 0:
        said = f"this root lacks {needs.name}"
    else:
        said = f"run as root or as {or_as}" if or_as else "run as root"
        return f"{said}, or {otherwise}" if otherwise else said
    return f"{said}: {otherwise}" if otherwise else said
