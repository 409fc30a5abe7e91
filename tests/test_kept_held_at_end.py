"""The connections a kept load holds when it ends include those still waiting for their first reply then
(loads/kept.py's held at end).

nginx with reuseport, 100 connections opened at once, 1 ms of work: 9 of one worker's 35 connections sat in
its accept queue until after the 6 s deadline; held at end read 26 for it (91 in all), and the pinned model,
which reads held at end for a load whose connections live for the whole run, modelled 91 clients, its note
saying '21/26/18/26' beside the kept table's '21 35 18 26'.

The server here is the test's own, one thread serving one connection at a time: it answers the first
connection until the client closes it (at the load's end), and only then accepts the second, whose first
request has waited in the accept queue all along. Its own count of the connections it held to the end is
the witness.
"""

from __future__ import annotations

import os
import socket
import threading

from accept_order.core.concurrent_load import ConcurrentLoad
from accept_order.core.protocol import HTTP_KEEPALIVE
from accept_order.core.target import ReplyAttribution
from accept_order.loads.generator import run_load

ACCEPT_TIMEOUT_S = 20.0  # the second connection waits in the queue this long at most


def _reply() -> bytes:
    body = f"worker {os.getpid()}\n".encode()
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def _serve_one_at_a_time(listener: socket.socket, connections: int, answered: list[int]) -> None:
    """Accept `connections` one after another, each served until its client closes it."""
    listener.settimeout(ACCEPT_TIMEOUT_S)
    reply = _reply()
    for _ in range(connections):
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            return
        count, pending = 0, b""
        with conn:
            conn.settimeout(ACCEPT_TIMEOUT_S)
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    break
                if not data:
                    break
                pending += data
                while b"\r\n\r\n" in pending:
                    pending = pending.partition(b"\r\n\r\n")[2]
                    conn.sendall(reply)
                    count += 1
        answered.append(count)


def test_a_connection_first_answered_after_the_load_ended_is_held_at_its_end() -> None:
    """Two connections kept for a 0.3 s load: the first carries every request of the load, the second waits
    in the accept queue until the first is closed at the load's end, and is answered as the loop drains. Both
    were open when the load ended: held at end counts both for the one worker (1 without the fix)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    answered: list[int] = []
    server = threading.Thread(target=_serve_one_at_a_time, args=(listener, 2, answered), daemon=True)
    server.start()
    try:
        load = ConcurrentLoad(
            connections=None, duration_s=0.3, concurrency=2, driver_procs=1, requests_per_connection=0
        )
        result = run_load(
            listener.getsockname(), ReplyAttribution((os.getpid(),)), load.validated(), protocol=HTTP_KEEPALIVE
        )
        server.join(ACCEPT_TIMEOUT_S)
    finally:
        listener.close()
    assert not server.is_alive(), "the test's server did not see both connections closed"
    assert len(answered) == 2 and answered[0] >= 1 and answered[1] == 1, answered  # the witness: its own count
    assert not result.errors, result.errors
    assert sum(result.served.values()) == sum(answered)
    assert result.connections == {0: 2}
    assert result.held == {0: 2}, result.held
