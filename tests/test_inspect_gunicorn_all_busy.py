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
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OutputReader, run_cli, wait_for

TIMEOUT_S = 30.0
CLOCK_NANOSLEEP = "230"  # x86_64's syscall number, the first field of /proc/PID/syscall
GUNICORN = Path(sys.executable).with_name("gunicorn")
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
    (tmp_path / "slow.py").write_text(APP)
    proc = subprocess.Popen(
        [str(GUNICORN), "-w", "2", "--timeout", "120", "-b", "127.0.0.1:0", "--chdir", str(tmp_path), "slow:app"],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    clients: list[socket.socket] = []
    try:
        assert proc.stderr is not None
        log = OutputReader(proc.stderr)
        port = int(log.wait_for(r"Listening at: http://127\.0\.0\.1:(\d+)", TIMEOUT_S).group(1))
        booted = r"Booting worker with pid: (\d+)"
        log.wait_for(f"(?s){booted}.*{booted}", TIMEOUT_S)
        workers = [int(pid) for pid in re.findall(booted, log.text)]
        for _ in workers:
            client = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
            client.sendall(b"GET / HTTP/1.0\r\n\r\n")
            clients.append(client)
        wait_for(
            lambda: [_syscall(pid) for pid in workers],
            lambda calls: set(calls) == {CLOCK_NANOSLEEP},
            TIMEOUT_S,
            "both workers in the app's sleep",
        )
        yield proc.pid, workers
    finally:
        for client in clients:
            client.close()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(TIMEOUT_S)
        if proc.stderr is not None:
            proc.stderr.close()


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
