"""run --attach --protocol http, where the reply names no worker and the server closes the connection after its
answer before the tool has found which worker held it: the reply was fine and only its holder was gone, but it was
counted 'unexpected reply b'hello\\n''. Python's http.server (2 forked workers, HTTP/1.0 without a Content-Length,
run as a user: no bpftrace) read that for 86 to 100 of 100 connections, whose replies it had all served (its own
log: 100). Now 'bad reply (it names no worker, and the server closed the connection before its holder was found)'.

The server is a thread of this process, which the real owner lookup (inet_diag, then this process's fd table) would
find holding the accepted socket; it answers with a body that ends with the connection, and closes, so that the
client reads the reply to its end only once the socket is gone from every fd table."""

from __future__ import annotations

import socket
import threading

import pytest
from attached_one_connection import TIMEOUT_S, AttachedOneConnection

from accept_order.core.spec import SequentialLoad
from accept_order.loads.sequential import run_sequential

REPLY = b"HTTP/1.0 200 OK\r\nServer: BaseHTTP/0.6\r\n\r\nhello\n"  # no Content-Length: the close ends the body


class _AnswersAndCloses(AttachedOneConnection):
    """An attached server's one worker (this process) that answers the request and closes at once."""

    def __init__(self) -> None:
        self.answered = threading.Event()
        super().__init__()

    def answer(self, conn: socket.socket) -> None:
        conn.sendall(REPLY)
        conn.close()
        self.answered.set()  # the server's own word that it served the request, then closed


@pytest.mark.parametrize("gap_ms", [0.0, 1.0], ids=["one-at-a-time", "paced"])
def test_a_reply_whose_holder_closed_is_said_so(gap_ms: float) -> None:
    target = _AnswersAndCloses()
    try:
        (record,) = run_sequential(
            target, SequentialLoad(connections=1, gap_ms=gap_ms, timeout_s=TIMEOUT_S, settle=False)
        )
    finally:
        target.close()
    assert target.failure is None, target.failure
    assert target.answered.is_set()
    assert record.worker is None
    assert record.error == (
        "bad reply (it names no worker, and the server closed the connection before its holder was found)"
    ), record
