"""inspect (8422ebc): a thread asleep on a ring inspect cannot read is not called busy.

8422ebc reads a thread asleep in io_uring_enter whose ring's fdinfo could not be read as 'ring-unread', promising
'io_uring fd N: unknown whether it has an accept armed'. That line is shown only for a verdict's waiters, losers
and busy workers, which a ring-unread thread is none of, so inspect of `serve -m io-uring -w 2` with its fdinfo
unread said 'Mechanism: not seen / no thread waits on a listener at this moment (all busy?)' of two idle workers.
Here a real ring of the test process, and a thread of it asleep on it holding a real listener.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener
from accept_order.experiments.inspect.sample import resolve
from accept_order.probes.fd_table import OpenFile, parse_uring_fdinfo
from accept_order.probes.proc_waits import ThreadWait

uring_api = pytest.importorskip("uring_api")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        yield sock


def _verdict_words(listener: socket.socket, fdinfo: str) -> tuple[str | None, str]:
    ring = uring_api.Ring(entries=8)
    inode = os.fstat(listener.fileno()).st_ino
    files = {
        listener.fileno(): OpenFile(listener.fileno(), "socket", inode),
        ring.fd: OpenFile(ring.fd, "io_uring", ops=parse_uring_fdinfo(fdinfo)),
    }
    wait = ThreadWait(tid=os.getpid(), name="worker", call="io_uring_enter", fd=ring.fd)
    seen = resolve(os.getpid(), wait, files, frozenset({inode}), {}, threads=1)
    verdict = classify([seen], [Listener(inode, "127.0.0.1", listener.getsockname()[1])], {}, {os.getpid(): {inode}})
    ring.close()
    return verdict.mechanism, " ".join(verdict.evidence)


def test_a_ring_whose_fdinfo_was_not_read_is_not_called_busy(listener: socket.socket) -> None:
    mechanism, words = _verdict_words(listener, "")  # '': the fdinfo not read
    assert mechanism is None
    assert "all busy" not in words, words
    assert "1 thread holding one sleeps in io_uring_enter() on a ring whose fdinfo could not be read" in words, words


def test_a_worker_seen_nowhere_is_still_all_busy(listener: socket.socket) -> None:
    """A ring read, with nothing armed (the kernel's own fdinfo): the thread waits on no listener, as before."""
    ring = uring_api.Ring(entries=8)
    with open(f"/proc/self/fdinfo/{ring.fd}") as f:
        idle = f.read()
    ring.close()
    assert "PollList:" in idle and "op=" not in idle.partition("PollList:")[2].partition("CqOverflowList")[0]
    mechanism, words = _verdict_words(listener, idle)
    assert mechanism is None and words == "no thread waits on a listener at this moment (all busy?)"


def test_a_ring_polling_an_unnamed_descriptor_is_not_called_busy(listener: socket.socket) -> None:
    """Readiness through the ring (IORING_OP_POLL_ADD, op=6, then accept(): an event loop on io_uring) shows in the
    fdinfo without the descriptor polled: since 8422ebc such a worker, idle, was 'all busy?' (before, io_uring)."""
    ring = uring_api.Ring(entries=8)
    ring.prepare_poll(listener.fileno(), 1, "listener")  # POLLIN on the listener: nobody connects
    ring.submit()
    with open(f"/proc/self/fdinfo/{ring.fd}") as f:
        armed = f.read()
    ring.close()
    assert "op=6" in armed and "op=13" not in armed  # the kernel's word: a poll armed, no accept
    mechanism, words = _verdict_words(listener, armed)
    assert mechanism is None and "all busy" not in words, words
    assert "on a ring with a poll armed on a descriptor its fdinfo does not name" in words, words
