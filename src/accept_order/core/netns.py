"""A private network namespace for this process, so per-namespace settings can change without touching
the host's: `reload` sets net.ipv4.tcp_migrate_req both ways there, and its kernel counters are its own.

unshare(CLONE_NEWNET) moves the calling process (and every child it starts afterwards) into a new, empty
namespace; it ends when the last process in it does, so nothing is left behind on any exit path. Python
3.11 has no os.unshare, hence ctypes. The new namespace's loopback is down: it is brought up with the
SIOCSIFFLAGS ioctl, the way `ip link set lo up` does it.

A user without CAP_SYS_ADMIN (no sudo, on a shared host) makes the network namespace inside a user namespace of
its own, as `unshare -Urn` would: there it holds CAP_NET_ADMIN over that network namespace alone (enough to set
tcp_migrate_req and bring loopback up), and its uid and gid are mapped to themselves, so the files it writes and
the processes it starts stay the user's. Root is not taken this way: a root whose CAP_SYS_ADMIN was dropped (a
container's) was meant not to make namespaces.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct

from .capabilities import ADMIN, holds, what_would_let_it
from .errors import AcceptOrderError
from .libc import libc

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
MAX_USER_NAMESPACES = "user/max_user_namespaces"
USERNS_CLONE = "kernel/unprivileged_userns_clone"
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
MIGRATE_REQ = "net/ipv4/tcp_migrate_req"


class NamespaceError(AcceptOrderError):
    """A private network namespace could not be made or set up (a runtime problem: exit 1)."""


def namespace_inode() -> int | None:
    try:
        return os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return None


def enter_private() -> int:
    """Move this process into a new network namespace with loopback up; returns the host's namespace
    inode (to check it was left). NamespaceError saying why when the kernel refuses."""
    host = namespace_inode()
    if libc().unshare(CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        why = os.strerror(code)
        if code != errno.EPERM:
            raise NamespaceError(f"cannot make a private network namespace: {why}")
        # a user's is made in a user namespace of its own, as `unshare -Urn` would; root's refusal is said
        refused = _refused_by() if os.geteuid() == 0 or holds(ADMIN) else _in_user_namespace()
        if refused is not None:
            raise NamespaceError(f"cannot make a private network namespace: {why} ({refused})")
    if namespace_inode() == host:
        raise NamespaceError("unshare(CLONE_NEWNET) returned but this process is still in the host's namespace")
    loopback_up()
    return host or 0


def _refused_by() -> str:
    """What kept unshare(CLONE_NEWNET) from this process: CAP_SYS_ADMIN, which root too may lack (a container's);
    or, held, a filter above it (seccomp or a security module: a container's, systemd's RestrictNamespaces=)."""
    if holds(ADMIN):
        return "this process holds CAP_SYS_ADMIN: a seccomp filter or security module (a container's) may forbid it"
    return f"a private network namespace needs CAP_SYS_ADMIN: {what_would_let_it(ADMIN)}"


def _in_user_namespace() -> str | None:
    """Enter a user namespace of this user's own with a network namespace in it (`unshare -Urn`, but the uid
    and gid mapped to themselves): None once in, else what refused it and what would do instead. The kernel
    allows it only to a process of one thread (unshare(2): EINVAL), which the CLI is until it starts a load."""
    uid, gid = os.geteuid(), os.getegid()
    if libc().unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        limit = read_sysctl(MAX_USER_NAMESPACES)
        if limit == "0":
            by = "user.max_user_namespaces is 0"
        elif read_sysctl(USERNS_CLONE) == "0":  # Debian's and Arch's own switch, before 6.x kernels dropped it
            by = "kernel.unprivileged_userns_clone is 0"
        elif code == errno.ENOSPC:  # the user's count at the limit, or 32 user namespaces nested: said as a limit
            by = f"{os.strerror(code)}: this user's user.max_user_namespaces ({limit}) reached, or 32 nested"
        elif code == errno.EINVAL:  # a thread started before it: the tool's own mistake, said as such
            by = f"{os.strerror(code)}: this process already runs threads"
        else:
            by = f"{os.strerror(code)}: a security module or seccomp filter may forbid it"
        return (
            f"a private network namespace needs CAP_SYS_ADMIN, or a user namespace of this user's own, which this "
            f"kernel refused too ({by}): {what_would_let_it(ADMIN)}"
        )
    try:  # setgroups first: an unprivileged process may map its gid only once setgroups(2) is denied
        for name, line in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(line)
    except OSError as exc:
        raise NamespaceError(f"cannot map this user into its own user namespace: {exc.strerror}") from None
    return None


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, request))[1]
        try:
            fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))
        except OSError as exc:
            raise NamespaceError(f"cannot bring loopback up in the private namespace: {exc.strerror}") from None


def read_sysctl(name: str) -> str | None:
    """A /proc/sys value as text (`net/ipv4/tcp_migrate_req`), None when this kernel has no such setting."""
    try:
        with open(os.path.join("/proc/sys", name)) as f:
            return f.read().strip()
    except OSError:
        return None


def write_sysctl(name: str, value: str) -> None:
    """Set a per-namespace setting; call only inside a private namespace (the host's is never touched)."""
    try:
        with open(os.path.join("/proc/sys", name), "w") as f:
            f.write(value)
    except OSError as exc:
        raise NamespaceError(f"cannot set {name.replace('/', '.')} = {value}: {exc.strerror}") from None
