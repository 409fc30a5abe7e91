"""A process's open files as far as accepting goes: sockets, epoll instances (what each watches, with
which flags), io_uring instances; and whether two descriptors are one open file.

`/proc/PID/fd/N` names the file (`socket:[INODE]`, `anon_inode:[eventpoll]`, `anon_inode:[io_uring]`);
`/proc/PID/fdinfo/N` of an epoll lists each watched descriptor as
`tfd: 6 events: 10000019 data: ... pos:0 ino:bde11d sdev:9`: `events` is the registered mask in hex
(bit 28, 0x10000000, is EPOLLEXCLUSIVE) and `ino` the watched file's inode in hex (a listener's inode as
inet_diag and `socket:[...]` give it in decimal). An io_uring's fdinfo lists the requests armed on a
file's wait queue under `PollList:` (`op=13` is IORING_OP_ACCEPT).

Every epoll instance has the same inode (the one anonymous inode they all share), so the inode cannot say
whether two processes share one. kcmp(2) with KCMP_FILE can: it compares the kernel's file objects behind
two descriptors of two processes (it needs the same access as reading the processes' memory maps: the same
user, or root). Where kcmp is missing (a kernel without CONFIG_KCMP) `same_file` answers None.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
from dataclasses import dataclass, field

EPOLLEXCLUSIVE = 1 << 28
IORING_OP_ACCEPT = 13
KCMP_FILE = 0
KCMP_SYSCALL = {"x86_64": 312, "aarch64": 272, "riscv64": 272}

_TFD = re.compile(r"tfd:\s*(\d+)\s+events:\s*([0-9a-fA-F]+).*?\bino:\s*([0-9a-fA-F]+)")
_OP = re.compile(r"\bop=(\d+)")


@dataclass(frozen=True)
class Watch:
    """One descriptor an epoll instance watches: its number in the owner's table, the events mask, the
    watched file's inode."""

    fd: int
    events: int
    inode: int

    @property
    def exclusive(self) -> bool:
        return bool(self.events & EPOLLEXCLUSIVE)


@dataclass(frozen=True)
class OpenFile:
    """One descriptor: `kind` is socket, eventpoll, io_uring or other; `inode` for sockets (and the
    anonymous inode of the others); `watches` for an epoll; `ops` armed on an io_uring (PollList)."""

    fd: int
    kind: str
    inode: int | None = None
    watches: tuple[Watch, ...] = ()
    ops: tuple[int, ...] = field(default=())

    @property
    def accept_armed(self) -> bool:
        return IORING_OP_ACCEPT in self.ops


def parse_epoll_fdinfo(text: str) -> tuple[Watch, ...]:
    return tuple(Watch(int(m[1]), int(m[2], 16), int(m[3], 16)) for m in _TFD.finditer(text))


def parse_uring_fdinfo(text: str) -> tuple[int, ...]:
    """The opcodes of requests armed on some file's wait queue (the lines after `PollList:`)."""
    _, found, rest = text.partition("PollList:")
    if not found:
        return ()
    lines: list[str] = []
    for line in rest.splitlines()[1:]:
        if not line.startswith((" ", "\t")):
            break  # the next section
        lines.append(line)
    return tuple(int(m[1]) for m in _OP.finditer("\n".join(lines)))


def _fdinfo(pid: int, fd: int) -> str:
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return ""  # closed meanwhile


def open_files(pid: int) -> dict[int, OpenFile]:
    """fd -> OpenFile for every socket, epoll and io_uring of `pid` (other files are left out).
    PermissionError: another user's process, without root."""
    files: dict[int, OpenFile] = {}
    directory = f"/proc/{pid}/fd"
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, ProcessLookupError):
        return files  # gone meanwhile
    for name in names:
        try:
            link = os.readlink(f"{directory}/{name}")
        except OSError:
            continue  # closed between listdir and readlink
        fd = int(name)
        if link.startswith("socket:["):
            files[fd] = OpenFile(fd, "socket", int(link[8:-1]))
        elif link == "anon_inode:[eventpoll]":
            files[fd] = OpenFile(fd, "eventpoll", watches=parse_epoll_fdinfo(_fdinfo(pid, fd)))
        elif link.startswith("anon_inode:[io_uring]") or link.startswith("anon_inode:io_uring"):
            files[fd] = OpenFile(fd, "io_uring", ops=parse_uring_fdinfo(_fdinfo(pid, fd)))
    return files


_libc: ctypes.CDLL | None = None


def same_file(pid_a: int, fd_a: int, pid_b: int, fd_b: int) -> bool | None:
    """Are these two descriptors one open file (kcmp KCMP_FILE)? None: kcmp cannot tell (no such call on
    this kernel or architecture, not allowed, or a process gone)."""
    global _libc
    number = KCMP_SYSCALL.get(os.uname().machine)
    if number is None:
        return None
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    result = _libc.syscall(number, pid_a, pid_b, KCMP_FILE, fd_a, fd_b)
    return None if result < 0 else result == 0
