"""A sample's open files (probes/file_table.py FileTable): the same mapping a dict of every socket, epoll and
io_uring made at once was, in the same order, with the sockets' OpenFiles made only when asked (issue 30 §2: a
256-worker nginx's tables hold 67,000 sockets, and making each was a fifth of inspect's reading)."""

from __future__ import annotations

import os
import select
import socket

import pytest

from accept_order.probes import fd_table
from accept_order.probes.fd_table import FdTables, OpenFile, read_links
from accept_order.probes.file_table import polls_of


def _every_file(pid: int) -> dict[int, OpenFile]:
    """What FdTables.files made before: every link's OpenFile, in the table's order."""
    links = read_links(pid) or {}
    return {fd: file for fd, link in links.items() if (file := fd_table._open_file(pid, fd, link)) is not None}


def test_a_table_is_every_socket_epoll_and_io_uring_in_order() -> None:
    pid = os.getpid()
    sockets = [socket.socket() for _ in range(20)]
    epoll = select.epoll()
    try:
        epoll.register(sockets[3].fileno(), select.EPOLLIN)
        table, held = FdTables().files_and_sockets(pid)
        every = _every_file(pid)
        assert list(table) == list(every) and dict(table) == every and len(table) == len(every)
        assert held == frozenset(f.inode for f in every.values() if f.kind == "socket")
        assert [f.fd for f in polls_of(table)] == [fd for fd, f in every.items() if f.kind != "socket"]
        assert epoll.fileno() in table and table.get(-1) is None and -1 not in table
        with pytest.raises(KeyError):
            table[-1]
    finally:
        epoll.close()
        for s in sockets:
            s.close()


def test_a_sample_makes_only_the_sockets_it_asks_about(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[int] = []
    real = fd_table._socket_file

    def counted(fd: int, inode: int) -> OpenFile:
        made.append(fd)
        return real(fd, inode)

    monkeypatch.setattr(fd_table, "_socket_file", counted)
    sockets = [socket.socket() for _ in range(50)]
    try:
        tables = FdTables()
        for _ in range(3):  # a look's samples: the table's sockets made once, when asked
            table, _ = tables.files_and_sockets(os.getpid())
            asked = table[sockets[7].fileno()]
            assert asked.inode == os.fstat(sockets[7].fileno()).st_ino and table[sockets[7].fileno()] is asked
        assert made == [sockets[7].fileno()]
        assert all(f.kind != "socket" for f in polls_of(table)) and made == [sockets[7].fileno()]
    finally:
        for s in sockets:
            s.close()


def test_descriptors_read_again_are_the_sample_s() -> None:
    """One opened since the table was read is added after the table's, in the order read again; one closed and
    reused by a file that plays no part in accepting is gone from the sample: as a dict of them had it."""
    pid = os.getpid()
    tables = FdTables()
    reused = socket.socket()
    try:
        tables.files_and_sockets(pid)
        links = tables.links(pid)
        fd = reused.fileno()
        reused.close()
        with open(os.devnull) as other, socket.socket() as a:
            assert other.fileno() == fd  # the lowest free number
            high = os.dup2(a.fileno(), max(links) + 5)  # a number the table never had
            again = [high, other.fileno(), a.fileno()]
            try:
                table, held = tables.files_and_sockets(pid, again=again)
            finally:
                os.close(high)
            expected = {fd: f for fd, link in links.items() if (f := fd_table._open_file(pid, fd, link)) is not None}
            now = {**_every_file(pid), high: OpenFile(high, "socket", os.fstat(a.fileno()).st_ino)}
            for fd in again:
                if fd in now:
                    expected[fd] = now[fd]
                else:
                    expected.pop(fd, None)
            assert list(table) == list(expected) and dict(table) == expected
            assert high in table and other.fileno() not in table and a.fileno() in table
            assert held == frozenset(f.inode for f in expected.values() if f.kind == "socket")
    finally:
        reused.close()


def test_a_descriptor_closed_while_its_table_is_read_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """read_links reads a table in one go; a descriptor closed between the listing and its readlink is left out,
    and every other is read."""
    with socket.socket() as gone, socket.socket() as kept:
        real = os.readlink

        def closed_meanwhile(name: str, dir_fd: int | None = None) -> str:
            if name == str(gone.fileno()):
                raise FileNotFoundError(name)
            return real(name, dir_fd=dir_fd)

        monkeypatch.setattr(fd_table.os, "readlink", closed_meanwhile)
        links = read_links(os.getpid()) or {}
        assert gone.fileno() not in links
        assert links[kept.fileno()] == f"socket:[{os.fstat(kept.fileno()).st_ino}]" and 0 in links
