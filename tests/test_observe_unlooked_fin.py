"""observe's bytes of connections no look saw say that a FIN is one of them (experiments/observe/closes.py).

nginx observed while `wrk -t2 -c100` opened its pool: 101 accepts, 100 connections in nginx's access log, and
'1 connection opened and closed between two looks: the 1 byte it received (0% of all) ...': wrk's first
connection, which sends nothing and closes. The kernel's tcpi_bytes_received counts the FIN's byte of sequence
space, so the one byte was the close, not data; the sentence now says a FIN counts.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import replace

from conftest import wait_for
from test_observe_load import result_with

from accept_order.experiments.observe.verdict import verdict

BYTES_RECEIVED_AT = 128  # struct tcp_info's tcpi_bytes_received (linux/tcp.h)


def test_the_kernel_counts_a_fin_as_a_byte_received() -> None:
    """The premise, from the kernel itself: a server socket that got a FIN and no data reads 1 byte received."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
        with client, server:

            def received() -> int:
                info = server.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
                return int(struct.unpack_from("=Q", info, BYTES_RECEIVED_AT)[0])

            assert received() == 0
            client.shutdown(socket.SHUT_WR)
            assert wait_for(received, lambda n: n == 1, 5.0, "the FIN to arrive") == 1
            assert server.recv(1) == b""  # and no data came: the byte is the FIN's


def _said(result: object) -> str:
    return next(line for line in verdict(result) if "between two looks" in line)  # type: ignore[arg-type]


def test_the_unlooked_bytes_say_a_fin_counts() -> None:
    result = result_with([25, 25, 25, 25], [1, 1, 1, 1], [100, 100, 100, 700], closes_counted=30, closes_lost=0)
    one = _said(replace(result, closed_unlooked=1, closed_unlooked_bytes_in=1))
    assert one.startswith("1 connection opened and closed between two looks: the 1 byte it received (0% of all)")
    assert one.endswith("; the kernel counts a FIN received as a byte, so that byte may be a close, not data"), one
    many = _said(replace(result, closed_unlooked=20, closed_unlooked_bytes_in=1000))
    assert many.endswith("; the kernel counts a FIN received as a byte, so 20 of them may be closes, not data"), many
    fewer = _said(replace(result, closed_unlooked=3, closed_unlooked_bytes_in=2))
    assert fewer.endswith("so 2 of them may be closes, not data"), fewer
    reset = _said(replace(result, closed_unlooked=2, closed_unlooked_bytes_in=0))  # reset: no FIN, no byte
    assert "FIN" not in reset, reset
