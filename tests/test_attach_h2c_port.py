"""A load at a port that speaks HTTP/2 in the clear says so (probes/tls_hello.speaks_h2c).

nginx with 'listen ... http2' and no ssl (the port h2load is pointed at with an http:// URL) answers the load's
HTTP/1.1 request with its SETTINGS frame and a GOAWAY, then closes: 'latency --attach PID --port PORT --protocol
http --pool -c 8 --requests-per-connection 0' said only 'served nothing: 2 × no reply'. The port is now asked
with the HTTP/2 preface once every request failed so, and the error line says it speaks h2c and what to do.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading

import pytest
from conftest import assert_one_error_line, run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf

from accept_order.probes.tls_hello import PREFACE, speaks_h2c

TIMEOUT_S = 20.0
ATTACH = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")

NGINX_H2C = one_server_conf("$status $server_protocol", listen=" http2")


def _one_answer(answer: bytes) -> tuple[socket.socket, threading.Thread, list[bytes]]:
    """A listener whose one connection gets `answer` once the client's first bytes came; what it read kept."""
    listener = socket.create_server(("127.0.0.1", 0))
    read: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(TIMEOUT_S)
            read.append(conn.recv(len(PREFACE)))
            conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread, read


@pytest.mark.parametrize(
    ("answer", "h2c"),
    [
        (bytes((0, 0, 6, 4, 0, 0, 0, 0, 0)) + bytes((0, 3, 0, 0, 0, 128)), True),  # SETTINGS, one setting
        (bytes((0, 0, 0, 4, 1, 0, 0, 0, 0)), False),  # a SETTINGS ACK is no server preface
        (bytes((0, 0, 8, 7, 0, 0, 0, 0, 0)) + bytes(8), False),  # GOAWAY first
        (b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n", False),  # a plain HTTP/1.1 server
        (b"", False),  # closed without a word
    ],
)
def test_the_preface_tells_h2c_apart(answer: bytes, h2c: bool) -> None:
    listener, thread, read = _one_answer(answer)
    with listener:
        said = speaks_h2c("127.0.0.1", listener.getsockname()[1], timeout_s=TIMEOUT_S)
        thread.join(TIMEOUT_S)
    assert read and read[0].startswith(b"PRI * HTTP/2.0") and PREFACE.startswith(read[0])  # the preface
    assert (said is not None) == h2c


@ATTACH
def test_latency_attached_to_nginx_h2c_says_it_speaks_h2c(free_port: int) -> None:
    with nginx_by_hand(NGINX_H2C, free_port, 2, TIMEOUT_S) as nginx:
        assert speaks_h2c("127.0.0.1", free_port) is not None  # Debian's nginx, answering the preface
        result = run_cli(
            [
                "latency",
                "--attach",
                str(nginx.master),
                "--port",
                str(free_port),
                "--protocol",
                "http",
                "--pool",
                "-c",
                "2",
                "--requests-per-connection",
                "0",
                "--duration",
                "1s",
                "--driver-procs",
                "1",
            ]
        )
        logged = nginx.access_log.read_text()
    # nginx's h2c port answers an HTTP/1.1 request with HTTP/2 frames (SETTINGS, GOAWAY): read to their end since
    # c50d1c4, a bad reply (not HTTP), where the client once waited for an HTTP head and read none
    line = assert_one_error_line(result, 1, "served nothing: 1 × bad reply (not an HTTP answer)")
    assert f"127.0.0.1:{free_port} speaks HTTP/2 without TLS (h2c: it answered the HTTP/2 preface with" in line
    assert "the http2 listen's reuseport if it has one" in line and "HTTP/2's streams over one connection" in line
    assert "TLS handshakes" not in line, line
    assert " 200 " not in f" {logged} ", logged  # the witness: nginx served the load nothing
