"""A process's open files as far as accepting goes: sockets, epoll instances (what each watches, with
which flags), io_uring instances; and whether two descriptors are one open file.

`/proc/PID/fd/N` names the file (`socket:[INODE]`, `anon_inode:[eventpoll]`, `anon_inode:[io_uring]`);
`/proc/PID/fdinfo/N` of an epoll lists each watched descriptor as
`tfd: 6 events: 10000019 data: ... pos:0 ino:bde11d sdev:9`: `events` is the registered mask in hex
(bit 28, 0x10000000, is EPOLLEXCLUSIVE) and `ino` the watched file's inode in hex (a listener's inode as
inet_diag and `socket:[...]` give it in decimal). An io_uring's fdinfo lists the requests armed on a
file's wait queue under `PollList:` (`op=13` is IORING_OP_ACCEPT).

`FdTables` is one look's fd tables: each process's /proc/PID/fd read once (a listing, then one readlink per
descriptor through a directory fd), kept for everything the look asks of them. A worker holding 10,000
connections has 10,000 links to read; inspect read each table about ten times a look before it kept them
(the holders of a listener, the processes fed over Unix sockets, then each sample's open files).

Every epoll instance has the same inode (the one anonymous inode they all share), so the inode cannot say
whether two processes share one. kcmp(2) with KCMP_FILE can: it compares the kernel's file objects behind
two descriptors of two processes (it needs the same access as reading the processes' memory maps: the same
user, or root), and orders them, so that many descriptors are grouped by sorting them, not by comparing
each pair. Where kcmp is missing (a kernel without CONFIG_KCMP) `same_file` and `file_order` answer None.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from functools import cached_property

from ..core.libc import libc
from .file_table import FileTable, Listing
from .proc_read import read_again, read_proc

EPOLLEXCLUSIVE = 1 << 28
IORING_OP_ACCEPT = 13
IORING_OP_POLL_ADD = 6  # readiness of some descriptor, which the fdinfo does not name
KCMP_FILE = 0
KCMP_SYSCALL = {"x86_64": 312, "aarch64": 272, "riscv64": 272}
_MACHINE = os.uname().machine

_TFD = re.compile(r"tfd:\s*(\d+)\s+events:\s*([0-9a-fA-F]+).*?\bino:\s*([0-9a-fA-F]+)")
_OP = re.compile(r"\bop=(\d+)")
_FEW = 8  # listeners looked up line by line in an epoll's fdinfo; more: the whole of it parsed once
# /proc files a look keeps open across its samples (FdTables(keep=True)): three for each process of one thread
# (its syscall, its wchan, its epoll's fdinfo), well under the usual limit of 1,024 descriptors; beyond, each
# file is opened for each read
MAX_KEPT = 512


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
    anonymous inode of the others); `watches` for an epoll (its fdinfo, parsed when first asked: a worker's
    epoll watches each connection it holds, and a look needs only the listeners' lines of most of them);
    `ops` armed on an io_uring (PollList; None where its fdinfo could not be read: closed meanwhile, or a
    PollList the kernel did not print, so that nothing armed is told from not known)."""

    fd: int
    kind: str
    inode: int | None = None
    ops: tuple[int, ...] | None = field(default=())
    fdinfo: str = field(default="", repr=False, compare=False)

    @cached_property
    def watches(self) -> tuple[Watch, ...]:
        return parse_epoll_fdinfo(self.fdinfo)

    def watching(self, inodes: Collection[int]) -> tuple[Watch, ...]:
        """The watches of these inodes (the listeners), in the order the fdinfo lists them: only the lines
        naming one are parsed, once for each set of inodes asked (a look's samples share an epoll's OpenFile
        while its fdinfo reads the same: FdTables.files_and_sockets)."""
        key = inodes if isinstance(inodes, frozenset) else frozenset(inodes)
        asked: dict[frozenset[int], tuple[Watch, ...]] = self.__dict__.setdefault("asked_watching", {})
        found = asked.get(key)
        if found is None:
            found = asked[key] = self._lines_watching(key)
        return found

    def _lines_watching(self, inodes: frozenset[int]) -> tuple[Watch, ...]:
        if "watches" in self.__dict__ or len(inodes) > _FEW:
            return tuple(w for w in self.watches if w.inode in inodes)
        found: list[tuple[int, Watch]] = []
        for inode in inodes:
            key = f"ino:{inode:x}"
            at = self.fdinfo.find(key)
            while at >= 0:
                start = self.fdinfo.rfind("\n", 0, at) + 1
                end = self.fdinfo.find("\n", at)
                line = self.fdinfo[start : end if end >= 0 else len(self.fdinfo)]
                found += [(start, w) for w in parse_epoll_fdinfo(line) if w.inode == inode]
                at = self.fdinfo.find(key, at + len(key))
        return tuple(w for _, w in sorted(found, key=lambda pair: pair[0]))

    @property
    def accept_armed(self) -> bool:
        return self.ops is not None and IORING_OP_ACCEPT in self.ops

    @property
    def poll_armed(self) -> bool:
        return self.ops is not None and IORING_OP_POLL_ADD in self.ops


def parse_epoll_fdinfo(text: str) -> tuple[Watch, ...]:
    return tuple(Watch(int(m[1]), int(m[2], 16), int(m[3], 16)) for m in _TFD.finditer(text))


def parse_uring_fdinfo(text: str) -> tuple[int, ...] | None:
    """The opcodes of requests armed on some file's wait queue (the lines after `PollList:`, which Linux 6.18
    prints, empty, for a ring with nothing armed); None where there is no such line (an fdinfo not read)."""
    _, found, rest = text.partition("PollList:")
    if not found:
        return None
    lines: list[str] = []
    for line in rest.splitlines()[1:]:
        if not line.startswith((" ", "\t")):
            break  # the next section
        lines.append(line)
    return tuple(int(m[1]) for m in _OP.finditer("\n".join(lines)))


def _fdinfo(pid: int, fd: int, read: Callable[[str], bytes | None] = read_proc) -> str:
    data = read(f"/proc/{pid}/fdinfo/{fd}")
    return "" if data is None else data.decode("ascii", "replace")  # "": closed meanwhile


def read_links(pid: int) -> dict[int, str] | None:
    """fd -> what /proc/PID/fd/FD links to, in the order the kernel lists them ({} once the process is gone;
    None: another user's process, without root). Read through a directory fd, which is tied to the process:
    a newcomer that reuses the pid meanwhile is not read in its place."""
    try:
        dir_fd = os.open(f"/proc/{pid}/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except PermissionError:
        return None
    except OSError:
        return {}  # gone meanwhile
    links: dict[int, str] = {}
    try:
        for name in os.listdir(dir_fd):
            try:
                links[int(name)] = os.readlink(name, dir_fd=dir_fd)
            except PermissionError:
                return None  # listed, not read: root without CAP_SYS_PTRACE (a container's) at another user's
            except OSError:
                continue  # closed between listdir and readlink
    except OSError:
        return {}  # gone while listed
    finally:
        os.close(dir_fd)
    return links


def _link(pid: int, fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None


def _socket_inode(link: str) -> int | None:
    return int(link[8:-1]) if link.startswith("socket:[") else None


def _polls(link: str) -> str | None:
    """The kind of a descriptor whose fdinfo says what it waits for (eventpoll, io_uring), else None."""
    if link == "anon_inode:[eventpoll]":
        return "eventpoll"
    if link.startswith("anon_inode:[io_uring]") or link.startswith("anon_inode:io_uring"):
        return "io_uring"
    return None


def _unread(fd: int, link: str) -> OpenFile | None:
    """The descriptor as an OpenFile without its fdinfo; None for files that play no part in accepting."""
    if link.startswith("socket:["):
        return _socket_file(fd, int(link[8:-1]))
    kind = _polls(link)
    return OpenFile(fd, kind) if kind is not None else None


_new = object.__new__


def _socket_file(fd: int, inode: int) -> OpenFile:
    """OpenFile(fd, "socket", inode), made without the frozen dataclass's __init__ (five object.__setattr__
    calls)."""
    file = _new(OpenFile)
    file.__dict__.update(fd=fd, kind="socket", inode=inode, ops=(), fdinfo="")
    return file


def _open_file(pid: int, fd: int, link: str) -> OpenFile | None:
    """The descriptor as an OpenFile (an epoll's or io_uring's fdinfo read now); None for other files."""
    inode = _socket_inode(link)
    if inode is not None:
        return OpenFile(fd, "socket", inode)
    kind = _polls(link)
    if kind == "eventpoll":
        return OpenFile(fd, kind, fdinfo=_fdinfo(pid, fd))
    if kind == "io_uring":
        return OpenFile(fd, kind, ops=parse_uring_fdinfo(_fdinfo(pid, fd)))
    return None


def open_files(pid: int) -> dict[int, OpenFile]:
    """fd -> OpenFile for every socket, epoll and io_uring of `pid` (other files are left out).
    PermissionError: another user's process, without root."""
    return FdTables().files(pid)


class FdTables:
    """One look's fd tables: each process's /proc/PID/fd read once, when first asked, and kept (see the
    module's docstring); with them what else the look asks once for all its samples (kcmp's answers, the
    threads' names). What a link names is taken to keep its meaning while the look lasts (a few hundred
    ms): a listener's descriptor, a worker's epoll or io_uring, its Unix sockets are made as it starts. Two
    things are read again at each `files` call, because they move while a server runs: an epoll's or
    io_uring's fdinfo (nginx's accept mutex adds its listeners to the epoll of the worker that takes the lock
    and removes them from the one that gives it up; an armed accept comes and goes with each connection),
    and the descriptors the caller names as `again` (those its threads wait on now: one may have been opened
    since, or its number closed and given to another file)."""

    def __init__(self, keep: bool = False) -> None:
        self._links: dict[int, dict[int, str] | None] = {}
        self._sockets: dict[int, frozenset[int]] = {}
        self._listings: dict[int, Listing[OpenFile]] = {}  # the OpenFiles made of each table's links, as they are asked
        # what each of those read last, and the OpenFile made of it: kept while its fdinfo reads the same (an
        # idle worker's epoll at every sample), so that its watches are parsed once a look
        self._last_read: dict[tuple[int, int], tuple[str, OpenFile]] = {}
        # kcmp's answers (file_order) for the look: like the links, the open files behind the descriptors are
        # taken to keep their meaning while it lasts (a sample of 64 nginx workers asks about 300)
        self.file_orders: dict[tuple[int, int, int, int], int | None] = {}
        # the threads' names (comm), read at a look's first sample: a server names its threads as it starts them
        self.thread_names: dict[tuple[int, int], str] = {}
        # with `keep`, what `read` opened, kept open until `close` for the look's next samples (a 64-worker
        # nginx: about 200 files read at each of five samples, an open and a close each saved four times)
        self._kept: dict[str, int] | None = {} if keep else None

    def read(self, path: str) -> bytes | None:
        """A /proc file's bytes, as read_proc reads them; with `keep`, read again through the descriptor of its
        first read (tied to its process: a pid reused meanwhile is not read in its place)."""
        kept = self._kept
        if kept is None:
            return read_proc(path)
        fd = kept.get(path)
        if fd is None:
            if len(kept) >= MAX_KEPT:
                return read_proc(path)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return None
            kept[path] = fd
        return read_again(fd)

    def close(self) -> None:
        """Close what `read` kept open (a look's end)."""
        kept, self._kept = self._kept, None if self._kept is None else {}
        for fd in (kept or {}).values():
            os.close(fd)

    def __enter__(self) -> FdTables:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def links(self, pid: int) -> dict[int, str]:
        """fd -> link of `pid`'s table ({} once gone). PermissionError: another user's process, without root."""
        if pid not in self._links:
            self._links[pid] = read_links(pid)
        links = self._links[pid]
        if links is None:
            raise PermissionError(errno.EACCES, f"/proc/{pid}/fd is not this user's to read")
        return links

    def readable(self, pid: int) -> bool:
        """False only for another user's process (without root); a process that is gone is readable (empty)."""
        try:
            self.links(pid)
        except PermissionError:
            return False
        return True

    def sockets(self, pid: int) -> frozenset[int]:
        """Every socket inode in `pid`'s fd table. PermissionError: not this user's to read."""
        links = self.links(pid)
        if pid not in self._sockets:  # a 256-worker nginx has 67,000 links: no call per link
            self._sockets[pid] = frozenset(int(link[8:-1]) for link in links.values() if link.startswith("socket:["))
        return self._sockets[pid]

    def holders(self, inodes: Collection[int], pids: Iterable[int]) -> dict[int, set[int]]:
        """pid -> which of `inodes` (sockets) its fd table holds, of `pids`; those this user may not read
        are left out."""
        found: dict[int, set[int]] = {}
        wanted = {f"socket:[{inode}]": inode for inode in inodes}  # the links compared as the kernel writes them
        for pid in pids:
            try:
                held = {wanted[link] for link in wanted.keys() & self.links(pid).values()}
            except PermissionError:
                continue
            if held:
                found[pid] = held
        return found

    def files(self, pid: int, again: Iterable[int] = ()) -> dict[int, OpenFile]:
        """fd -> OpenFile for every socket, epoll and io_uring of `pid`, in the table's order: the sockets as
        the table has them, each epoll's and io_uring's fdinfo read now, and the descriptors `again` read
        now. PermissionError: another user's process, without root."""
        return dict(self.files_and_sockets(pid, again)[0])

    def files_and_sockets(self, pid: int, again: Iterable[int] = ()) -> tuple[FileTable[OpenFile], frozenset[int]]:
        """`files(pid, again)` as a FileTable (its sockets made when asked), and every socket inode among them
        (the table's set, unless a descriptor read again is no longer what the table has)."""
        links = self.links(pid)
        listing = self._listings.get(pid)
        if listing is None:
            polls = [fd for fd, link in links.items() if link.startswith("anon_inode:") and _polls(link) is not None]
            listing = self._listings[pid] = Listing(links, polls, _unread)
        now: dict[int, OpenFile | None] = {}
        for fd in listing.polls:
            now[fd] = self._read_again(pid, fd, links[fd]) or listing.file(fd)
        changed = False
        for fd in again:
            link = _link(pid, fd)
            if link is None or link == links.get(fd):
                continue  # as the table has it (closed since: as a listing before the close had it)
            changed = True
            now[fd] = _open_file(pid, fd, link)
        table = FileTable(listing, now)
        if not changed:
            return table, self.sockets(pid)
        return table, frozenset(f.inode for f in table.values() if f.kind == "socket" and f.inode is not None)

    def _read_again(self, pid: int, fd: int, link: str) -> OpenFile | None:
        """An epoll's or io_uring's descriptor as `_open_file` makes it, its fdinfo read now; the OpenFile made
        at an earlier call when the fdinfo reads the same."""
        kind = _polls(link)
        if kind is None:
            return _open_file(pid, fd, link)
        text = _fdinfo(pid, fd, self.read)
        last = self._last_read.get((pid, fd))
        if last is not None and last[0] == text:
            return last[1]
        file = (
            OpenFile(fd, kind, fdinfo=text) if kind == "eventpoll" else OpenFile(fd, kind, ops=parse_uring_fdinfo(text))
        )
        self._last_read[pid, fd] = (text, file)
        return file


_KCMP_ORDER = {0: 0, 1: -1, 2: 1}  # kcmp's answers: equal, first below, first above (3: unequal, unordered)


def _kcmp_file(pid_a: int, fd_a: int, pid_b: int, fd_b: int) -> int:
    """kcmp(2)'s answer (-1: it failed or there is none here)."""
    number = KCMP_SYSCALL.get(_MACHINE)
    if number is None:
        return -1
    return int(libc().syscall(number, pid_a, pid_b, KCMP_FILE, fd_a, fd_b))


def file_order(pid_a: int, fd_a: int, pid_b: int, fd_b: int) -> int | None:
    """0 when these two descriptors are one open file, else -1 or 1 by the kernel's order of its file objects
    (kcmp KCMP_FILE: one order for every pair, so that descriptors sorted by it have each open file's
    together); None when kcmp cannot tell (no such call on this kernel or architecture, not allowed, a
    process gone) or gives no order."""
    return _KCMP_ORDER.get(_kcmp_file(pid_a, fd_a, pid_b, fd_b))


def same_file(pid_a: int, fd_a: int, pid_b: int, fd_b: int) -> bool | None:
    """Are these two descriptors one open file (kcmp KCMP_FILE)? None: kcmp cannot tell (no such call on
    this kernel or architecture, not allowed, or a process gone)."""
    result = _kcmp_file(pid_a, fd_a, pid_b, fd_b)
    return None if result < 0 else result == 0
