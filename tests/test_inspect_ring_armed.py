"""inspect names io_uring only where the ring a thread sleeps on has an accept armed (experiments/inspect/sample.py).

Any thread asleep in io_uring_enter, in a process holding the listener, was read as waiting on it: a server that
accepts with accept calls and uses a ring for other work was named io-uring. The ring's own fdinfo (Linux 6.18) is
the witness: `PollList:` empty with nothing armed, `op=13` (IORING_OP_ACCEPT) under it once an accept is armed.
An fdinfo that could not be read ('': closed meanwhile) is neither: the thread's wait is said to be unknown.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from accept_order.experiments.inspect.sample import resolve
from accept_order.probes.fd_table import OpenFile, parse_uring_fdinfo
from accept_order.probes.proc_waits import ThreadWait

uring_api = pytest.importorskip("uring_api")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        yield sock


def _rings() -> set[int]:
    """This process's io_uring descriptors (their links read anon_inode:[io_uring])."""
    return {int(fd) for fd in os.listdir("/proc/self/fd") if _is_ring(int(fd))}


def _is_ring(fd: int) -> bool:
    try:
        return "io_uring" in os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False


def _seen(listener: socket.socket, ring_fd: int, fdinfo: str) -> str:
    """How a thread of this process asleep in io_uring_enter on the ring reads, given the ring's fdinfo."""
    inode = os.fstat(listener.fileno()).st_ino
    files = {
        listener.fileno(): OpenFile(listener.fileno(), "socket", inode),
        ring_fd: OpenFile(ring_fd, "io_uring", ops=parse_uring_fdinfo(fdinfo)),
    }
    wait = ThreadWait(tid=os.getpid(), name="worker", call="io_uring_enter", fd=ring_fd)
    return resolve(os.getpid(), wait, files, frozenset({inode}), {}, threads=1).via


def test_a_ring_is_the_listeners_only_once_an_accept_is_armed(listener: socket.socket) -> None:
    before = _rings()
    ring = uring_api.Ring(entries=8)
    (fd,) = _rings() - before
    with open(f"/proc/self/fdinfo/{fd}") as f:
        idle = f.read()
    assert "PollList:" in idle and "op=13" not in idle  # the kernel's word: nothing armed
    # the thread sleeps on a ring for other work, holding the listener it accepts from elsewhere: not io_uring
    assert _seen(listener, fd, idle) != "io_uring"

    ring.prepare_accept_multishot(listener.fileno(), 0, "accept")
    ring.submit()
    with open(f"/proc/self/fdinfo/{fd}") as f:
        armed = f.read()
    assert "op=13" in armed  # the kernel's word: an accept armed
    assert _seen(listener, fd, armed) == "io_uring"

    # an fdinfo not read ('': the ring closed meanwhile) tells neither
    assert _seen(listener, fd, "") == "ring-unread"
    del ring
