"""One sample's open files of a process, as inspect reads them (probes/fd_table.py `FdTables.files_and_sockets`):
a mapping of fd -> OpenFile whose sockets are made from the table's links only when asked.

A 256-worker nginx's fd tables hold 67,000 sockets (each worker holds a channel to every other); a look asks
about a few of each table's descriptors (those its threads wait on, an epoll's, a poll set's), and making an
OpenFile of every socket at its first sample was a fifth of the look's CPU."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar


class _File(Protocol):
    """What this module asks of a file (fd_table.OpenFile, which imports this module): whether it is a socket."""

    @property
    def kind(self) -> str: ...


OpenFile = TypeVar("OpenFile", bound=_File)


class Listing(Generic[OpenFile]):
    """One process's fd table as a look read it (fd -> link, in the kernel's order), and the OpenFiles made of
    its links so far: each made when first asked, then the same object for the look's every sample."""

    __slots__ = ("links", "polls", "_make", "_made")

    def __init__(self, links: dict[int, str], polls: list[int], make: Callable[[int, str], OpenFile | None]) -> None:
        self.links = links
        self.polls = polls  # the epolls' and io_urings' descriptors, in the table's order
        self._make = make  # an fd's OpenFile from its link, its fdinfo unread (None: no part in accepting)
        self._made: dict[int, OpenFile | None] = {}

    def file(self, fd: int) -> OpenFile | None:
        made = self._made
        if fd in made:
            return made[fd]
        link = self.links.get(fd)
        file = made[fd] = None if link is None else self._make(fd, link)
        return file


class FileTable(Mapping[int, OpenFile]):
    """One sample's open files of a process: fd -> OpenFile for every socket, epoll and io_uring, in the table's
    order, as a dict of them would have it. The epolls' and io_urings' are the sample's (their fdinfo read now),
    as are the descriptors read again; every other is the look's listing's, made only when asked (see above).
    `polls()`: the epolls and io_urings alone, in the same order."""

    __slots__ = ("_listing", "_now")

    def __init__(self, listing: Listing[OpenFile], now: dict[int, OpenFile | None]) -> None:
        self._listing = listing
        self._now = now  # this sample's: each epoll and io_uring, and the descriptors read again (None: none now)

    def __getitem__(self, fd: int) -> OpenFile:
        now = self._now
        file = now[fd] if fd in now else self._listing.file(fd)
        if file is None:
            raise KeyError(fd)
        return file

    def get(self, fd: int, default: OpenFile | None = None) -> OpenFile | None:  # type: ignore[override]
        now = self._now
        file = now[fd] if fd in now else self._listing.file(fd)
        return default if file is None else file

    def __contains__(self, fd: object) -> bool:
        return isinstance(fd, int) and self.get(fd) is not None

    def __iter__(self) -> Iterator[int]:
        now, listing = self._now, self._listing
        for fd in listing.links:  # where the table had a file that takes part in accepting
            if listing.file(fd) is not None and (fd not in now or now[fd] is not None):
                yield fd
        for fd, file in now.items():  # then those that did not and do now, in the order they were read again
            if file is not None and listing.file(fd) is None:
                yield fd

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def polls(self) -> list[OpenFile]:
        """The epolls and io_urings, in the table's order (the values that are not sockets)."""
        now, listing = self._now, self._listing
        # a descriptor changed since (rare): one the table had as an epoll may be a socket now, or gone
        if any(file is None or file.kind == "socket" or fd not in listing.polls for fd, file in now.items()):
            return [file for file in self.values() if file.kind != "socket"]
        return [file for fd in listing.polls if (file := now.get(fd) or listing.file(fd)) is not None]


def polls_of(files: Mapping[int, OpenFile]) -> list[OpenFile]:
    """The epolls and io_urings among `files` (a FileTable's without making its sockets), in its order."""
    if isinstance(files, FileTable):
        return files.polls()
    return [file for file in files.values() if file.kind != "socket"]
