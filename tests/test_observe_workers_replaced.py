"""observe of a gunicorn whose workers are replaced as they run (--max-requests, common in production) ended when
its last watched worker left, and said 'every worker had exited: the server stopped while it was observed',
where the master ran on with new workers (pgrep -P: two new ones). It says the master runs on now, and that
observe ended there because the replacements are not watched. Here PyPI's gunicorn, one gthread worker and
--max-requests 20: after its 20th request the worker leaves and the master starts another."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from importlib.metadata import version
from pathlib import Path

import psutil
import pytest
from conftest import wait_for

from accept_order.experiments.observe.api import observe
from accept_order.experiments.observe.result import ObserveResult
from accept_order.servers.launched.gunicorn import gunicorn_missing

MAX_REQUESTS = 20
TIMEOUT_S = 120.0

# gunicorn 24+ listens on ~/.gunicorn/gunicorn.ctl unless told not to (23 has no such option)
NO_CONTROL_SOCKET = (
    ["--no-control-socket"] if gunicorn_missing() is None and int(version("gunicorn").split(".")[0]) >= 24 else []
)

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def fetch(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        while sock.recv(65536):
            pass


def test_workers_replaced_while_observed_are_not_a_stopped_server(tmp_path: Path, free_port: int) -> None:
    argv = [sys.executable, "-m", "gunicorn", "-w", "1", "-k", "gthread", "--max-requests", str(MAX_REQUESTS)]
    argv += ["-b", f"127.0.0.1:{free_port}", *NO_CONTROL_SOCKET, "accept_order.servers.launched.gunicorn_app:app"]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        master = psutil.Process(server.pid)
        (first,) = wait_for(lambda: [c.pid for c in master.children()], lambda w: len(w) == 1, 60, "one worker")
        wait_for(lambda: _answers(free_port), bool, 60, "gunicorn to answer")
        began, out = threading.Event(), list[object]()

        def run() -> None:
            try:
                out.append(observe(port=free_port, duration_s=TIMEOUT_S, on_snapshot=lambda _r: began.set()))
            except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
                out.append(exc)
                began.set()

        watcher = threading.Thread(target=run, daemon=True)
        watcher.start()
        assert began.wait(TIMEOUT_S), "observe did not start"
        for _ in range(MAX_REQUESTS):  # the worker's 20th answer is its last
            fetch(free_port)
        wait_for(lambda: psutil.pid_exists(first), lambda alive: not alive, 60, "the first worker to leave")
        watcher.join(TIMEOUT_S)  # it ends once its one worker has left
        assert not watcher.is_alive(), "observe did not end when its worker left"
        replaced = wait_for(lambda: [c.pid for c in master.children()], lambda w: w and first not in w, 60, "a new one")
        assert server.poll() is None and replaced, "the master runs on, on a new worker"
    finally:
        server.terminate()
        server.wait(timeout=30)
    (result,) = out
    if isinstance(result, BaseException):
        raise result
    assert isinstance(result, ObserveResult)
    notes = " ".join(result.notes)
    assert "the server stopped" not in notes, notes
    assert f"the master (pid {server.pid}) runs on" in notes, notes


def _answers(port: int) -> bool:
    try:
        fetch(port)
    except OSError:
        return False
    return True
