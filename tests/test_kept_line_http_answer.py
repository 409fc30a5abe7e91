"""A line client over kept connections does not count an HTTP server's error answers as served.

'latency --attach NGINX --port PORT --pool -c 8 --requests-per-connection 0' (the default --protocol line) sends
'next' on each kept connection; nginx answers 'HTTP/1.1 400 Bad Request' and closes. An attached server's replies
name no worker, so any line was counted served: 11,794 requests served, the rest of each answer read as the next
request's 11,782 × 'no reply', exit 0 (its access log: 11,794 lines, every one a 400). A line that is an HTTP status
line is now a bad reply that says the server speaks HTTP (core/protocol.KeptLine).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading

import pytest
from conftest import assert_one_error_line, run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf

from accept_order.core.concurrent_load import ConcurrentLoad
from accept_order.core.protocol import BAD_REPLY, HTTP_ANSWER, KEEP_LINE
from accept_order.core.target import ReplyAttribution
from accept_order.loads.generator import run_load

TIMEOUT_S = 20.0
ATTACH = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
ANSWER = b"HTTP/1.1 400 Bad Request\r\nServer: test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

NGINX = one_server_conf("$status")


def test_an_http_status_line_is_no_line_servers_answer() -> None:
    assert KEEP_LINE.body(b"HTTP/1.1 400 Bad Request\r\n") == b""
    assert KEEP_LINE.complaint(b"HTTP/1.1 400 Bad Request\r\n") == HTTP_ANSWER
    assert KEEP_LINE.body(b"worker 3 pid 4242\n") == b"worker 3 pid 4242\n"  # a line server's, as it was
    assert KEEP_LINE.complaint(b"hello\n") == BAD_REPLY


def test_a_kept_line_load_at_an_http_server_serves_nothing() -> None:
    """A server that answers each connection's first bytes as nginx answers 'next' (a 400, then a close): the
    client counts every one failed, as an HTTP answer; the server's own count of 400s sent is the witness."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    sent: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(TIMEOUT_S)
                if conn.recv(64):
                    conn.sendall(ANSWER)
                    sent.append(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        load = ConcurrentLoad(connections=20, concurrency=2, driver_procs=1, requests_per_connection=0)
        attached = ReplyAttribution((os.getpid(),), holds_socket=True)  # an attached server: replies name no one
        result = run_load(listener.getsockname(), attached, load.validated(), protocol=KEEP_LINE)
    finally:
        stop.set()
        thread.join(TIMEOUT_S)
        listener.close()
    assert sent, "the test's server answered nothing"
    assert not sum(result.served.values()), result.served
    assert dict(result.errors) == {HTTP_ANSWER: sum(result.errors.values())}, result.errors
    assert sum(result.errors.values()) == len(sent)  # one failure per 400 the server sent, nothing else


@ATTACH
def test_latency_attached_to_nginx_with_the_line_protocol_says_it_speaks_http(free_port: int) -> None:
    with nginx_by_hand(NGINX, free_port, 2, TIMEOUT_S) as nginx:
        result = run_cli(
            [
                # --protocol line given: an attached nginx without --protocol is refused before the load starts
                *("latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "line"),
                *("--pool", "-c", "2"),
                *("--requests-per-connection", "0", "--duration", "1s", "--driver-procs", "1"),
            ]
        )
        statuses = nginx.access_log.read_text().split()
    line = assert_one_error_line(result, 1, "served nothing: ", HTTP_ANSWER)
    assert statuses and set(statuses) == {"400"}, statuses  # the witness: nginx answered each with a 400
    assert f"{len(statuses)} × {HTTP_ANSWER}" in line, line
