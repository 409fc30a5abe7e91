"""latency --attach at Apache (event MPM, its DocumentRoot empty) and lighttpd (a 403): every connection was
answered, 'HTTP/1.1 404 Not Found' (curl), and latency said 'served nothing: 500 × no reply', the name of a
server that closed without a byte, and nothing of what to do. The status is now the failure's name ('bad
reply (HTTP 404)', as a kept connection's already was), from each of the load generator's loops, and an
attached server's error line says that '/' must answer 200 with a body."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator

import pytest
from conftest import assert_one_error_line, run_cli
from listening_process import replying
from test_uring_loop import URING, Server, drive

from accept_order.core.protocol import HTTP, LINE, HttpProtocol
from accept_order.loads import uring_loop

TIMEOUT_S = 20.0
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope"


def test_a_reply_read_and_not_kept_is_named_by_its_status() -> None:
    assert HTTP.failure(b"", b"") == "no reply"
    assert HTTP.failure(NOT_FOUND, HTTP.body(NOT_FOUND)) == "bad reply (HTTP 404)"
    page = b"HTTP/1.0 200 OK\r\n\r\nhello\n"
    assert HTTP.failure(page, HTTP.body(page)) == "bad reply"  # kept, and naming no worker (--target's note)
    assert LINE.failure(b"junk\n", b"junk\n") == "bad reply"


def answering(conn: socket.socket) -> None:
    """The request read (a reply sent before it would meet a reset), then the 404."""
    conn.settimeout(TIMEOUT_S)
    conn.recv(4096)
    conn.sendall(NOT_FOUND)


@URING
@pytest.mark.parametrize("loop", ["epoll", "chains", "uring-api"])
def test_each_loop_names_the_status(monkeypatch: pytest.MonkeyPatch, loop: str) -> None:
    """The epoll loop, liburing's linked chains and uring-api's loop (where the chains cannot run)."""
    if loop == "uring-api":
        monkeypatch.setattr(uring_loop, "chains_unavailable", lambda: "not here")
    with Server(answering) as server:
        result = drive("epoll" if loop == "epoll" else "io_uring", server.address, protocol=HttpProtocol(), slots=3)
    assert result["errors"] == {"bad reply (HTTP 404)": 20}, result["errors"]


@pytest.fixture
def not_found() -> Iterator[tuple[int, int]]:
    """(pid, port) of a process answering 404 to everything, until the test ends."""
    with replying(NOT_FOUND) as server:
        yield server


@pytest.mark.parametrize("driver", ["epoll", "io_uring"])
def test_target_names_the_status_from_each_loop(not_found: tuple[int, int], driver: str) -> None:
    _, port = not_found
    args = ["latency", "--target", f"127.0.0.1:{port}", "--protocol", "http", "-n", "20", "-c", "2"]
    result = run_cli([*args, "--driver-procs", "1", "--driver", driver])
    if driver == "io_uring" and "io_uring" in result.stderr and "served nothing" not in result.stderr:
        pytest.skip(f"io_uring cannot run here: {result.stderr.strip()}")
    line = assert_one_error_line(result, 1, "served nothing: 20 × bad reply (HTTP 404)")
    assert "no reply" not in line.replace("no reply named", ""), line


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
def test_attach_says_what_slash_must_answer(not_found: tuple[int, int]) -> None:
    pid, port = not_found
    args = ["latency", "--attach", str(pid), "--port", str(port), "--protocol", "http", "-n", "20", "-c", "2"]
    line = assert_one_error_line(
        run_cli([*args, "--driver-procs", "1"]), 1, "served nothing: 20 × bad reply (HTTP 404)"
    )
    assert "a connection counts as served on a 200 only" in line, line
