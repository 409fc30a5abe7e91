"""Review RA of fe151c0 (probes/file_table.py): a sample's FileTable against the dict of every file made at once
that it replaced, the same /proc answers given to both, with descriptors read again whose number now holds
another file (closed and reused since the table was read: a socket, an epoll, an io_uring, a pipe, nothing)."""

from __future__ import annotations

import os
import random
import select
import socket

import pytest

from accept_order.probes import fd_table
from accept_order.probes.fd_table import FdTables, OpenFile
from accept_order.probes.file_table import FileTable, Listing, polls_of

_NOW = ("socket:[123456789]", "anon_inode:[eventpoll]", "anon_inode:[io_uring]", "pipe:[42]", None)


def _eager(tables: FdTables, pid: int, again: list[int]) -> tuple[dict[int, OpenFile], frozenset[int]]:
    """fe151c0's parent's FdTables.files_and_sockets: every file made at once, the polls read again in place, the
    descriptors read again in place or after the table's, or removed."""
    links = tables.links(pid)
    files = {fd: f for fd, link in links.items() if (f := fd_table._unread(fd, link)) is not None}
    for fd in [fd for fd, f in files.items() if f.kind != "socket"]:
        files[fd] = tables._read_again(pid, fd, links[fd]) or files[fd]
    changed = False
    for fd in again:
        link = fd_table._link(pid, fd)
        if link is None or link == links.get(fd):
            continue
        changed = True
        now = fd_table._open_file(pid, fd, link)
        if now is not None:
            files[fd] = now
        else:
            files.pop(fd, None)
    if not changed:
        return files, tables.sockets(pid)
    return files, frozenset(f.inode for f in files.values() if f.kind == "socket" and f.inode is not None)


def _key(file: OpenFile) -> tuple[object, ...]:
    return (file.fd, file.kind, file.inode, file.ops)


def test_a_file_table_reads_as_every_file_made_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    pid = os.getpid()
    sockets = [socket.socket() for _ in range(12)]
    epolls = [select.epoll() for _ in range(3)]
    try:
        epolls[1].register(sockets[2].fileno(), select.EPOLLIN)
        fake: dict[int, str | None] = {}
        real_link = fd_table._link
        monkeypatch.setattr(fd_table, "_link", lambda p, fd: fake[fd] if fd in fake else real_link(p, fd))
        tables = FdTables()
        fds = list(tables.links(pid))
        rng = random.Random(30)
        for _ in range(300):
            again = sorted({*rng.sample(fds, 4), *(e.fileno() for e in rng.sample(epolls, 1)), max(fds) + 3})
            fake.clear()
            fake.update((fd, rng.choice(_NOW)) for fd in again if rng.random() < 0.7)
            table, held = tables.files_and_sockets(pid, again)
            every, held_then = _eager(tables, pid, again)
            assert [(fd, _key(f)) for fd, f in table.items()] == [(fd, _key(f)) for fd, f in every.items()]
            assert held == held_then and len(table) == len(every)
            assert [_key(f) for f in polls_of(table)] == [_key(f) for f in every.values() if f.kind != "socket"]
    finally:
        for e in epolls:
            e.close()
        for s in sockets:
            s.close()


def test_an_epoll_s_number_reused_by_a_socket_is_not_among_the_polls() -> None:
    """The number the table had as an epoll, read again as a socket (closed and reused since): polls() listed the
    socket as an epoll where a dict of them would not."""
    listing = Listing({3: "anon_inode:[eventpoll]", 4: "socket:[9]"}, [3], fd_table._unread)
    table = FileTable(listing, {3: OpenFile(3, "socket", 11)})
    assert polls_of(table) == [] and [_key(f) for f in table.values()] == [(3, "socket", 11, ()), (4, "socket", 9, ())]
