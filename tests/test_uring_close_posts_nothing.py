"""Review R5 of 13ab616 (the io_uring chains close a served connection at once): the close posts nothing when
it succeeds and its slot is taken again at once, the close queued before the slot's next socket (the kernel runs
both in their order, each to its end, when it takes them from the queue). Waiting for the close's completion
before reusing the slot cost every connection a completion more and a turn of the loop before its slot was used
again. That the close never meets the next connection's socket is what test_uring_loop.py and
test_uring_chains.py check of every served connection: a close queued after the next socket fails 28 of them."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest
from test_uring_chains import CHAINS, chains_only  # noqa: F401  (a fixture)
from test_uring_loop import Server, drive, no_descriptor_left, refusing, replying

from accept_order.loads import drivers, uring_chains

CONNECTIONS = 200


class Counted:
    """liburing, counting the completions the loop reaps (what it hands io_uring_cq_advance)."""

    def __init__(self) -> None:
        self.real = drivers.chains_binding()
        self.reaped = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def io_uring_cq_advance(self, ring: Any, n: int) -> Any:
        self.reaped += n
        return self.real.io_uring_cq_advance(ring, n)


@CHAINS
def test_a_served_connection_posts_its_reply_and_its_eof_and_nothing_for_its_close(
    chains_only: None,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    binding = Counted()
    monkeypatch.setattr(uring_chains, "chains_binding", lambda: binding)
    with no_descriptor_left(), Server(replying(b"worker 0 pid 1\n")) as server:
        result = drive("io_uring", server.address, requests=CONNECTIONS, slots=4)
    assert (result["errors"], result["served"]) == ({}, {0: CONNECTIONS}), result
    assert binding.reaped == 2 * CONNECTIONS  # the reply's receive and the EOF's, each connection


@CHAINS
def test_a_refused_connection_posts_its_connect_alone(
    chains_only: None,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    binding = Counted()
    monkeypatch.setattr(uring_chains, "chains_binding", lambda: binding)
    with no_descriptor_left(), refusing() as address:
        result = drive("io_uring", address, requests=CONNECTIONS, slots=4)
    assert result["errors"] == {"ECONNREFUSED": CONNECTIONS}, result
    assert binding.reaped == CONNECTIONS  # the failed connect; its socket's close, done, posts nothing


FIN_WITHIN_S = 5.0  # the most the ring's exit waits for the server to have read the client's FIN


class ExitAfterFin:
    """liburing, but io_uring_queue_exit first notes whether the server has read the client's FIN by then."""

    def __init__(self, fin: threading.Event) -> None:
        self.real = drivers.chains_binding()
        self.fin = fin
        self.before_exit: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def io_uring_queue_exit(self, ring: Any) -> Any:
        self.before_exit.append(self.fin.wait(FIN_WITHIN_S))
        return self.real.io_uring_queue_exit(ring)


@CHAINS
def test_the_last_connection_is_closed_before_the_ring_is(
    chains_only: None,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The last connections' closes were queued and never submitted: the ring's exit closed them, from a kworker,
    # and a server that waits for the client's FIN (gunicorn's sync worker, up to 2 s) waited on that.
    fin = threading.Event()

    def lingering(conn: socket.socket) -> None:
        conn.sendall(b"worker 0 pid 1\n")
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(2 * FIN_WITHIN_S)
        while conn.recv(4096):
            pass
        fin.set()  # b"": the client's FIN

    binding = ExitAfterFin(fin)
    monkeypatch.setattr(uring_chains, "chains_binding", lambda: binding)
    with no_descriptor_left(), Server(lingering) as server:
        result = drive("io_uring", server.address, requests=1, slots=1)
    assert (result["errors"], result["served"]) == ({}, {0: 1}), result
    assert binding.before_exit == [True]
