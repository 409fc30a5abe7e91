"""inspect of a gunicorn whose sync workers are all serving: PyPI's gunicorn 27 ('-w 3', started by hand) under wrk
read 'gunicorn, 0 workers', every process's role 'process', an empty 'How each worker waits', and, at another look,
'no thread waits on a listener at this moment and none is running: 1 thread holding one waits in an epoll without it:
the server has taken its listeners out of its epolls for now (Apache's event MPM ...)': the one thread was the
master's second (gunicorn 27's arbiter waits in an epoll of its own), and the workers were in the app's sleep. Now the
master's threads are not taken for a worker's, and the master's children holding the listener are its workers, busy.

Here PyPI's gunicorn (the test extra's) with 2 sync workers whose app sleeps 60 s; two requests hold both, which the
kernel shows (each worker's /proc/PID/syscall is clock_nanosleep's) before inspect looks."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli, wait_for
from gunicorn_by_hand import GUNICORN, gunicorn_by_hand

TIMEOUT_S = 30.0
CLOCK_NANOSLEEP = "230"  # x86_64's syscall number, the first field of /proc/PID/syscall
APP = """
import time


def app(environ, start_response):
    time.sleep(60)
    start_response("200 OK", [])
    return [b"late"]
"""

pytestmark = [
    pytest.mark.skipif(not GUNICORN.exists(), reason="needs PyPI's gunicorn (pip install '.[test]')"),
    pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86_64's syscall numbers"),
]


def _syscall(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split(" ", 1)[0]
    except OSError:
        return "gone"


@pytest.fixture
def gunicorn_busy(tmp_path: Path) -> Iterator[tuple[int, list[int]]]:
    clients: list[socket.socket] = []
    with gunicorn_by_hand(APP, tmp_path, 2, TIMEOUT_S, "--timeout", "120") as gunicorn:
        try:
            for _ in gunicorn.workers:
                client = socket.create_connection(("127.0.0.1", gunicorn.port), timeout=TIMEOUT_S)
                client.sendall(b"GET / HTTP/1.0\r\n\r\n")
                clients.append(client)
            wait_for(
                lambda: [_syscall(pid) for pid in gunicorn.workers],
                lambda calls: set(calls) == {CLOCK_NANOSLEEP},
                TIMEOUT_S,
                "both workers in the app's sleep",
            )
            yield gunicorn.master, gunicorn.workers
        finally:
            for client in clients:
                client.close()


def test_inspect_names_the_busy_workers_of_a_gunicorn_all_serving(gunicorn_busy: tuple[int, list[int]]) -> None:
    master, workers = gunicorn_busy
    result = run_cli(["inspect", str(master), "--samples", "1"])
    out = result.output
    assert result.exit_code == 0, out
    assert f"gunicorn, master pid {master}, 2 workers" in out.splitlines()[0], out
    assert "taken its listeners out" not in out, out
    assert "no thread waits on a listener at this moment (all busy?)" in out, out
    for pid in workers:
        assert any(
            line.split()[1:3] == [str(pid), "busy"] for line in out.splitlines() if line.split()[:1] in (["w0"], ["w1"])
        ), out
