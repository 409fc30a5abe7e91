"""PyPI's gunicorn with 2 gthread workers, and the clients the observe tests drive it with: one HTTP/1.0 request a
connection (`fetch`), or a kept connection of REQUESTS requests (`kept_connection`).

Shared by the observe tests of a threaded worker (sleeps, connections seen untraced, the holdings' look): a test
imports the fixture by name (`from gunicorn_gthread import gunicorn_gthread`), as conftest's helpers are imported
(tests/ is on sys.path; no test_ prefix, so pytest collects nothing here).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import wait_for

REQUESTS = 20  # per kept connection
REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


def fetch(port: int) -> None:
    """One request on a connection of its own, read until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        while sock.recv(65536):
            pass


def answered(sock: socket.socket) -> None:
    """One request over `sock`, its whole reply read."""
    sock.sendall(REQUEST)
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += sock.recv(65536)
    head, _, body = reply.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        body += sock.recv(65536)


def kept_connection(port: int) -> None:
    """REQUESTS requests over one connection, each sent once the one before is answered, then closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        for _ in range(REQUESTS):
            answered(sock)


def answers(port: int) -> bool:
    """The server answered one request (False while it does not listen yet)."""
    try:
        fetch(port)
    except OSError:
        return False
    return True


@pytest.fixture
def gunicorn_gthread(free_port: int, tmp_path: Path) -> Iterator[tuple[int, list[int]]]:
    """gunicorn (PyPI) with 2 gthread workers of 4 threads each: a worker's main thread polls and accepts, its pool
    threads read and answer (they are born as needed, and end only with the worker). Its HOME and XDG_RUNTIME_DIR
    are the test's directory: gunicorn 24+ makes its control socket there (~/.gunicorn/gunicorn.ctl, left behind
    in root's home before), and 23 has no --no-control-socket to refuse it with."""
    pytest.importorskip("gunicorn")
    command = [sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", "4", "-w", "2"]
    command += ["-b", f"127.0.0.1:{free_port}", "--graceful-timeout", "2"]
    proc = subprocess.Popen(
        [*command, "accept_order.servers.launched.gunicorn_app:app"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)},
    )
    try:
        import psutil

        workers = wait_for(
            lambda: [c.pid for c in psutil.Process(proc.pid).children()], lambda w: len(w) == 2, 60, "2 workers"
        )
        wait_for(lambda: answers(free_port), bool, 60, "gunicorn to answer")
        yield free_port, workers
        # the master's unix sockets (gunicorn 24+'s control socket, made once it runs) are in the test's directory
        paths = [c.laddr for c in psutil.Process(proc.pid).net_connections("unix") if c.laddr]
        assert all(Path(p).is_relative_to(tmp_path) for p in paths), paths
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
