"""A running process's files as it sees them: its command line, its environment, and the regular files its paths
name, resolved in its own root and mount namespace (a container's, a chroot's), never in ours.

A path is resolved with openat2(2) and RESOLVE_IN_ROOT from the process's root (/proc/PID/root): its absolute
symlinks and `..` stay inside that root, as they did for the process (a plain open of /proc/PID/root/etc/x.ini
would follow an absolute symlink there into our own /). A relative path is resolved from a directory named as a path
in that root: its working directory (/proc/PID/cwd read as a path there) or another one the caller knows (where
a server changed directory after it read its config). Where the working directory is not a path in its root (its
directory was removed), a relative path is resolved beneath /proc/PID/cwd only (RESOLVE_BENEATH: no `..` out of
it, no absolute symlink), so it is either the process's file or not read.

Only a regular, non-empty file no larger than the caller's limit is read (a larger one is refused, not cut: a
setting past the cut would be missed unsaid): the path is first opened O_PATH (which does nothing to what it names:
a FIFO's open would wait for a writer and take its bytes, a device's open can act, a watchdog arms), checked by
fstat, then reopened through /proc/self/fd (the same inode: nothing can be swapped in between), nonblocking. /proc's
files (0 bytes by their size, the kernel's state: /proc/kmsg's read takes its messages from their reader) are not
read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from typing import NamedTuple

# openat2(2) (Linux 5.6; one number on every architecture, from the unified syscall table) and its resolve flags
OPENAT2 = 437
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08
RESOLVE_IN_ROOT = 0x10
DELETED = " (deleted)"  # readlink's mark of a removed directory


class TooLarge(Exception):
    """The file is larger than the caller's limit: its first bytes alone are not what it says (a setting after
    them would be missed), so none is read."""


class Started(NamedTuple):
    """What a process was started with, as /proc shows it. `root`: a directory of ours that is its root (/proc/PID/
    root, or / for files of this process's own); `cwd`: its working directory as a path in that root (None: not
    known); `cwd_link`: a directory of ours that is its working directory, for a relative path where `cwd` is None."""

    argv: tuple[str, ...]
    environ: dict[str, str] | None  # None: not readable by this user
    root: str = "/"
    cwd: str | None = None
    cwd_link: str | None = None


def started(pid: int, argv: Sequence[str]) -> Started:
    """Process `pid`'s environment and where its paths lead, with `argv` as its command line (read by the caller)."""
    root, cwd_link = f"/proc/{pid}/root", f"/proc/{pid}/cwd"
    return Started(tuple(argv), environment(pid), root, _in_root(root, cwd_link), cwd_link)


def environment(pid: int) -> dict[str, str] | None:
    """/proc/PID/environ: the environment the process was started with (what it set since is not there); None where
    it is not readable. The first of a name repeated wins, as getenv(3) finds it."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    found: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        name, equals, value = entry.partition(b"=")
        if equals and name:
            found.setdefault(name.decode("utf-8", "replace"), value.decode("utf-8", "replace"))
    return found


def _in_root(root: str, cwd_link: str) -> str | None:
    """The working directory as a path in the process's root: both links read as paths of ours (or, for a root
    that ours cannot reach, of its mount namespace), the root's taken off the front. None where it cannot be told."""
    try:
        top, here = os.readlink(root), os.readlink(cwd_link)
    except OSError:
        return None
    if here.endswith(DELETED) or top.endswith(DELETED) or not here.startswith("/"):
        return None
    if top == "/":
        return here
    if here == top:
        return "/"
    return here[len(top) :] if here.startswith(top + "/") else None


def read_regular(where: Started, path: str, start: str | None, limit: int) -> str | None:
    """The regular, non-empty file `path` names for the process, as text; None where it is not one or cannot be
    read; TooLarge where it holds more than `limit` bytes (by its size, or by what it gave while read: it may grow
    between the two). A relative `path` is taken from `start`, a directory as a path in the process's root (its
    working directory, or where it started); None: from its working directory where known."""
    if not path:
        return None
    try:
        fd = _resolved(where, path, start)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not (stat.S_ISREG(info.st_mode) and info.st_size > 0):
            return None
        if info.st_size > limit:
            raise TooLarge(f"{info.st_size} bytes")
        readable = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    finally:
        os.close(fd)
    with os.fdopen(readable, "rb") as f:
        try:
            data = f.read(limit + 1)
        except OSError:
            return None
    if len(data) > limit:
        raise TooLarge(f"more than {limit} bytes")
    return data.decode("utf-8", "replace")


def _open_path(directory: str, path: str, resolve: int) -> int:
    """An O_PATH descriptor of `path` resolved from `directory` with `resolve`'s openat2 flags. Where openat2 is not
    there (ENOSYS: Linux before 5.6, or a seccomp filter; EPERM: a container runtime's filter that predates it,
    Docker's before 20.10), a plain open, and only where `directory` is our own root (a process in our mount
    namespace and root: the same resolution)."""
    import ctypes as c  # here: only a config named on a server's command line is read

    top = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        how = (c.c_uint64 * 3)(os.O_PATH | os.O_CLOEXEC, 0, resolve | RESOLVE_NO_MAGICLINKS)
        libc = c.CDLL(None, use_errno=True)
        libc.syscall.restype = c.c_long
        fd = libc.syscall(
            c.c_long(OPENAT2), c.c_int(top), c.c_char_p(os.fsencode(path)), c.byref(how), c.c_size_t(c.sizeof(how))
        )
        if fd >= 0:
            return int(fd)
        error = c.get_errno()
        if error not in (errno.ENOSYS, errno.EPERM) or not _our_root(directory, resolve):
            raise OSError(error, os.strerror(error), path)
        return os.open(path, os.O_PATH | os.O_CLOEXEC, dir_fd=top)
    finally:
        os.close(top)


def _our_root(directory: str, resolve: int) -> bool:
    """Whether `directory` is this process's own root in its own mount namespace, where a plain open resolves a path
    as openat2's RESOLVE_IN_ROOT would (never for RESOLVE_BENEATH, which a plain open cannot keep)."""
    if resolve != RESOLVE_IN_ROOT:
        return False
    try:
        theirs, ours = os.stat(directory), os.stat("/")
        pid = directory.split("/")[2] if directory.startswith("/proc/") else "self"
        same_mounts = os.readlink(f"/proc/{pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt")
    except (OSError, IndexError):
        return False
    return (theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino) and same_mounts


def names_cwd(where: Started, directory: str) -> bool:
    """Whether `directory`, a path in the process's root, is its working directory now (the same inode)."""
    if where.cwd_link is None or not os.path.isabs(directory):
        return False
    try:
        fd = _open_path(where.root, directory, RESOLVE_IN_ROOT)
    except OSError:
        return False
    try:
        theirs, named = os.stat(where.cwd_link), os.fstat(fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    return (theirs.st_dev, theirs.st_ino) == (named.st_dev, named.st_ino)


def _resolved(where: Started, path: str, start: str | None) -> int:
    """An O_PATH descriptor of `path` as the process names it (read_regular's resolution); OSError where none."""
    base = start if start is not None else where.cwd
    if os.path.isabs(path) or base is not None:
        full = path if os.path.isabs(path) else os.path.join(base or "/", path)
        return _open_path(where.root, full, RESOLVE_IN_ROOT)
    if where.cwd_link is not None:
        return _open_path(where.cwd_link, path, RESOLVE_BENEATH)
    raise OSError(errno.ENOENT, "its working directory is not known", path)


def why_unread(where: Started, path: str, start: str | None) -> str:
    """Why read_regular(where, path, start, ...) gave nothing, in a few words (the reason of a moment after it)."""
    try:
        fd = _resolved(where, path, start)
    except OSError as error:
        return os.strerror(error.errno).lower() if error.errno else str(error)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size == 0:
            return "empty"
        os.close(os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC))
    except OSError as error:
        return os.strerror(error.errno).lower() if error.errno else str(error)
    finally:
        os.close(fd)
    return "read now, not before"  # it changed in between


def directory_names(where: Started, path: str, start: str | None) -> list[str] | None:
    """The names in the directory `path` names for the process (resolved as read_regular resolves a file), sorted as
    bytes (C's collation); None where it is not a directory this user can list."""
    try:
        fd = _resolved(where, path, start)
    except OSError:
        return None
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            return None
        listed = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return sorted(os.listdir(listed), key=os.fsencode)
    except OSError:
        return None
    finally:
        os.close(listed)


def modified_at(where: Started, path: str, start: str | None) -> float | None:
    """When what `path` names for the process (a file or directory, resolved as read_regular resolves a file) last
    changed: the later of its mtime and ctime, in seconds since the epoch; None where it names nothing here. The
    ctime too: a file put in its place keeps its own mtime ('mv', 'cp -p', a package's conffile), which may be
    older than the process that read the one before (HAProxy's config renamed over it 1 s after its start read
    an mtime an hour before), while its ctime is the rename's; a chmod moves it as well, and is said as a change."""
    try:
        fd = _resolved(where, path, start)
    except OSError:
        return None
    try:
        status = os.fstat(fd)
        return max(status.st_mtime, status.st_ctime)
    except OSError:
        return None
    finally:
        os.close(fd)
