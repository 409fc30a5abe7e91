"""The io_uring chains close a timed-out connection at once: its socket stayed open (in the server's accept
queue, or held by a worker) until its slot was next used, which in an open loop or at the end of a run may be
never. Here the server holds the first connection until the client closes it and answers the second only then;
the second comes half a second later, in an open loop, and nothing reuses the first's slot: closed at once,
the first lets the second be served within its own timeout; left open, both time out."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest
from test_uring_chains import CHAINS
from test_uring_loop import LOOPS, TIMEOUT, URING, Server, drive, no_descriptor_left

from accept_order.loads import uring_loop

TIMEOUT_S = 1.0  # the first times out at 1 s; the second is due at 0.5 s and times out at 1.5 s
CLOSED_WITHIN_S = 10.0  # the longest the server waits for the first to be closed (the run's end closes it anyway)


def first_held_until_closed() -> Any:
    """The first connection: held until the client closes it (EOF); every later one answered at once."""
    first = threading.Event()

    def handle(conn: socket.socket) -> None:
        if not first.is_set():
            first.set()
            conn.settimeout(CLOSED_WITHIN_S)
            while conn.recv(4096):  # nothing comes on a line protocol: this returns b"" at the client's close
                pass
            return
        conn.sendall(b"worker 0 pid 1\n")

    return handle


def run(loop: str) -> dict[str, Any]:
    with no_descriptor_left(), Server(first_held_until_closed()) as server:
        return drive(loop, server.address, requests=2, slots=2, rate=2.0, timeout_s=TIMEOUT_S)


@CHAINS
def test_the_chains_close_a_timed_out_connection_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_here(*args: Any) -> dict[str, Any]:
        raise AssertionError("uring-api's loop ran instead of the chains")

    monkeypatch.setattr(uring_loop, "drive_uring_api", not_here)
    result = run("io_uring")
    assert (result["errors"], result["served"]) == ({TIMEOUT: 1}, {0: 1})


@URING
@pytest.mark.parametrize("loop", [loop for loop in LOOPS if loop != "io_uring"])
def test_the_other_loops_do_as_much(loop: str) -> None:
    result = run(loop)
    assert (result["errors"], result["served"]) == ({TIMEOUT: 1}, {0: 1})
