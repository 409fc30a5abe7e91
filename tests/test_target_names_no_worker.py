"""latency --target at a server whose replies name no worker (a stock nginx's page): the error line says what a
reply must read for --target to attribute it, as run --target's report does; it said '300 × bad reply' alone."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from conftest import assert_one_error_line, run_cli


@pytest.fixture
def plain_http() -> Iterator[int]:
    """A server answering every HTTP request with a page that names no worker, until the test ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        done.set()
        thread.join(5)
        listener.close()


def test_latency_target_at_a_page_says_what_a_reply_must_read(plain_http: int) -> None:
    args = ["latency", "--target", f"127.0.0.1:{plain_http}", "--protocol", "http", "-n", "20", "-c", "2"]
    line = assert_one_error_line(run_cli([*args, "--driver-procs", "1"]), 1, "served nothing: 20 × bad reply")
    assert "no reply named a worker" in line and "'worker PID'" in line, line
