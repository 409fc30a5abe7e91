"""The io_uring chains close a served connection when its reply is read to its end, as a client does: its close
was left to the slot's next socket (which replaces the registered descriptor), so its FIN waited for the slot to
come round again, and in 4 of 3000 connections here its release came 2 s late even then. gunicorn 27's sync
worker answers, half-closes and waits up to 2 s for the client's FIN before it takes the next connection, so the
connections behind it waited that long: a tail at 2, 4, 6 s that looked like the kernel's SYN retransmissions
(none were counted). Here a server that does as gunicorn does (one connection at a time, each answered, then
the client's FIN awaited) serves two connections started at once; nothing reuses the first's slot, so left open
it holds the second until the client gives up on it."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from test_uring_chains import CHAINS
from test_uring_loop import LOOPS, TIMEOUT, URING, Server, drive, no_descriptor_left

from accept_order.loads import uring_loop

TIMEOUT_S = 3.0  # the client's: the second connection fails at 3 s if the first is not closed before
LINGER_S = 20.0  # the most the server waits for a client's FIN (gunicorn's 2 s, longer than the client's timeout)


def lingering(conn: socket.socket) -> None:
    """Answer, half-close, and wait for the client's FIN before the next connection (gunicorn's close_graceful)."""
    conn.sendall(b"worker 0 pid 1\n")
    conn.shutdown(socket.SHUT_WR)
    conn.settimeout(LINGER_S)
    while conn.recv(4096):  # b"" at the client's FIN
        pass


def run(loop: str) -> dict[str, Any]:
    with no_descriptor_left(), Server(lingering) as server:
        return drive(loop, server.address, requests=2, slots=2, timeout_s=TIMEOUT_S)


@CHAINS
def test_the_chains_close_a_served_connection_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_here(*args: Any) -> dict[str, Any]:
        raise AssertionError("uring-api's loop ran instead of the chains")

    monkeypatch.setattr(uring_loop, "drive_uring_api", not_here)
    result = run("io_uring")
    assert (result["errors"], result["served"]) == ({}, {0: 2}), result


@URING
@pytest.mark.parametrize("loop", [loop for loop in LOOPS if loop != "io_uring"])
def test_the_other_loops_do_as_much(loop: str) -> None:
    result = run(loop)
    assert (result["errors"], result["served"]) == ({}, {0: 2}), result
    assert TIMEOUT not in result["errors"]
