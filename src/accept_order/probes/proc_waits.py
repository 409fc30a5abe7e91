"""How a thread waits, as the kernel shows it: /proc/PID/task/TID/syscall and wchan.

`/proc/TID/syscall` holds the number of the system call a blocked thread sleeps in and its six arguments
("running" while it runs, "-1 ..." when it sleeps outside a system call); `wchan` names the kernel function
it sleeps in (`inet_csk_accept`, `do_epoll_wait`, ...). Reading either is as cheap as a stat and changes
nothing in the thread. System call numbers differ per architecture: the tables below cover x86_64 and the
generic table (aarch64, riscv64 and other newer ports), for the calls a server waits in.

poll's and select's sets are in the process's memory, at the addresses the call's arguments give: read
from /proc/PID/mem where this user may (ptrace access: root, or the same user without Yama's restriction),
they say which descriptors the thread waits on (Puma's and Unicorn's workers wait for the listener in one
thread's select while other threads poll their own pipes; only the set tells the two apart).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from .proc_read import read_proc

# number -> name, for the calls a server's threads sleep in (and a few it is often seen in)
X86_64: dict[int, str] = {
    0: "read",
    7: "poll",
    23: "select",
    34: "pause",
    35: "nanosleep",
    43: "accept",
    45: "recvfrom",
    47: "recvmsg",
    56: "clone",
    57: "fork",
    58: "vfork",
    60: "exit",
    61: "wait4",
    128: "rt_sigtimedwait",
    130: "rt_sigsuspend",
    202: "futex",
    230: "clock_nanosleep",
    231: "exit_group",
    232: "epoll_wait",
    247: "waitid",
    270: "pselect6",
    271: "ppoll",
    281: "epoll_pwait",
    288: "accept4",
    299: "recvmmsg",
    426: "io_uring_enter",
    435: "clone3",
    441: "epoll_pwait2",
    449: "futex_waitv",
}
# asm-generic/unistd.h: aarch64 and the other architectures that use the generic table (no epoll_wait,
# select or poll there: the libc calls epoll_pwait, pselect6 and ppoll)
GENERIC: dict[int, str] = {
    22: "epoll_pwait",
    63: "read",
    72: "pselect6",
    73: "ppoll",
    93: "exit",
    94: "exit_group",
    95: "waitid",
    98: "futex",
    101: "nanosleep",
    115: "clock_nanosleep",
    133: "rt_sigsuspend",
    137: "rt_sigtimedwait",
    202: "accept",
    207: "recvfrom",
    212: "recvmsg",
    220: "clone",
    242: "accept4",
    243: "recvmmsg",
    260: "wait4",
    426: "io_uring_enter",
    435: "clone3",
    441: "epoll_pwait2",
    449: "futex_waitv",
}
TABLES: dict[str, dict[int, str]] = {"x86_64": X86_64, "aarch64": GENERIC, "riscv64": GENERIC}

# Calls whose first argument is the descriptor the thread waits on (select's and poll's sets are in the
# process's memory, which /proc does not show without ptrace)
FD_FIRST = frozenset(
    {
        "accept",
        "accept4",
        "epoll_wait",
        "epoll_pwait",
        "epoll_pwait2",
        "io_uring_enter",
        "read",
        "recvfrom",
        "recvmsg",
        "recvmmsg",
    }
)
ACCEPTS = frozenset({"accept", "accept4"})
EPOLL_WAITS = frozenset({"epoll_wait", "epoll_pwait", "epoll_pwait2"})
SELECTS = frozenset({"select", "pselect6"})
POLLS = frozenset({"poll", "ppoll"})
RECEIVES = frozenset({"read", "recvfrom", "recvmsg", "recvmmsg"})
FUTEX_LOCK_PI, FUTEX_LOCK_PI2, FUTEX_CMD_MASK = 6, 13, 0x7F  # linux/futex.h
POLLIN, POLLRDNORM = 0x1, 0x40  # what a wait for a connection asks of poll
POLLFD_SIZE = 8  # struct pollfd: int fd; short events; short revents
MAX_SET = 65536  # descriptors read from one set at most (a larger nfds is not a server's wait)


def syscall_names(machine: str | None = None) -> dict[int, str]:
    """The table of this machine's architecture ({} for one this module does not know)."""
    return TABLES.get(machine or _machine(), {})


@cache
def _machine() -> str:
    return os.uname().machine  # asked once: a sample of 64 workers asked it once a thread


@dataclass(frozen=True)
class ThreadWait:
    """One thread at one moment. `call`: the system call's name ("running" while it runs, "?" for a number
    the table lacks, "none" asleep outside a call, "unknown" when /proc would not say); `fd`: the
    descriptor it waits on, for calls whose first argument is one; `lock`: a futex call that takes a
    priority-inheriting lock (a process-shared mutex, as uWSGI's thunder lock)."""

    tid: int
    name: str
    call: str
    number: int | None = None
    fd: int | None = None
    wchan: str = ""
    lock: bool = False
    fds: tuple[int, ...] | None = None

    @property
    def asleep(self) -> bool:
        return self.call not in ("running", "unknown")


def _read(path: str, read: Callable[[str], bytes | None] = read_proc) -> str | None:
    data = read(path)
    if data is None:
        return None
    text = data.decode("ascii", "replace")
    if "\r" in text:  # as a text file reads it (a thread may name itself anything): universal newlines
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.strip()


def parse_syscall(text: str, table: dict[int, str]) -> tuple[str, int | None, list[int]]:
    """(call name, number, arguments) from /proc/TID/syscall's text."""
    fields = text.split()
    if not fields or fields[0] == "running":
        return "running", None, []
    number = int(fields[0])
    if number < 0:
        return "none", None, []
    args = [int(a, 16) for a in fields[1:7]]
    return table.get(number, "?"), number, args


def thread_wait(
    pid: int,
    tid: int,
    table: dict[int, str] | None = None,
    name: str | None = None,
    read: Callable[[str], bytes | None] = read_proc,
) -> ThreadWait:
    """What thread `tid` of process `pid` waits in now. Another user's thread: call "unknown" (its
    syscall file needs ptrace access; its wchan reads as 0). `name`: the thread's, read before (its comm
    file is read otherwise). `read`: how its syscall and wchan files are read (a look's FdTables.read keeps
    them open for its next samples)."""
    base = f"/proc/{pid}/task/{tid}"
    name = name if name is not None else _read(f"{base}/comm") or "?"
    text = _read(f"{base}/syscall", read)
    wchan = _read(f"{base}/wchan", read) or ""
    wchan = "" if wchan == "0" else wchan
    if text is None:
        return ThreadWait(tid, name, "unknown", wchan=wchan)
    call, number, args = parse_syscall(text, syscall_names() if table is None else table)
    fd = args[0] if call in FD_FIRST and args else None
    lock = call == "futex" and len(args) > 1 and (args[1] & FUTEX_CMD_MASK) in (FUTEX_LOCK_PI, FUTEX_LOCK_PI2)
    fds = read_set(pid, call, args, f"{base}/syscall", text) if call in POLLS | SELECTS else None
    return ThreadWait(tid, name, call, number, fd, wchan, lock, fds)


def parse_pollfds(data: bytes) -> tuple[int, ...]:
    """The descriptors of a struct pollfd array that wait to read (negative ones are skipped by poll)."""
    fds = []
    for i in range(0, len(data) - POLLFD_SIZE + 1, POLLFD_SIZE):
        fd = int.from_bytes(data[i : i + 4], sys.byteorder, signed=True)
        events = int.from_bytes(data[i + 4 : i + 6], sys.byteorder)
        if fd >= 0 and events & (POLLIN | POLLRDNORM):
            fds.append(fd)
    return tuple(fds)


def parse_fd_set(data: bytes, nfds: int) -> tuple[int, ...]:
    """The descriptors below `nfds` set in an fd_set (an array of unsigned longs, bit fd % 64 of word fd // 64)."""
    fds = []
    for word in range(len(data) // 8):
        bits = int.from_bytes(data[word * 8 : word * 8 + 8], sys.byteorder)
        fds += [word * 64 + bit for bit in range(64) if bits >> bit & 1 and word * 64 + bit < nfds]
    return tuple(fds)


def read_set(pid: int, call: str, args: list[int], syscall_path: str, syscall_text: str) -> tuple[int, ...] | None:
    """The descriptors a thread asleep in poll or select waits to read, from its process's memory; None when
    this user may not read it, or the thread left the call while it was read (its syscall file changed)."""
    if len(args) < 2:
        return None
    if call in POLLS:
        address, count = args[0], args[1]
        size = count * POLLFD_SIZE
    else:
        count, address = args[0], args[1]
        size = (count + 63) // 64 * 8
    if count > MAX_SET:
        return None
    if address == 0 or size == 0:
        return ()
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.pread(fd, size, address)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) != size or _read(syscall_path) != syscall_text:
        return None
    return parse_pollfds(data) if call in POLLS else parse_fd_set(data, count)


def thread_ids(pid: int) -> list[int]:
    """The process's threads, main thread first ([] once it is gone). A process of one thread is told by its
    task directory's link count (2 + its threads): one stat where a listing is an open, two getdents and a
    close (inspect asks for each of a server's processes at every look: 325 times for 64 nginx workers)."""
    try:
        if os.stat(f"/proc/{pid}/task").st_nlink == 3:
            return [pid]  # its one thread is its main thread (a thread that execs takes the process's id)
        tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []
    return sorted(tids, key=lambda t: t != pid)
