"""observe ends when its last watched worker has exited, even while that worker is a zombie its master has not reaped
yet. Its ticks took a worker for gone only where its usage could not be read, and a zombie's can (/proc/PID/stat,
status and the process clock stay): a worker that exited under a master that does not reap it at once (stopped,
busy, or slow to wait) was watched on as though it served, to the end of --duration. servers/watched.gone() counts
the zombie state as gone, and observe asks it of every worker at each tick.

PyPI's gunicorn, one gthread worker, --max-requests: the master is stopped (SIGSTOP) before the worker answers its
last request, so the worker stays a zombie (its /proc state 'Z', the witness) until the master runs again. The note
then does not say the master replaced its workers (87a3966's words for a master that runs on): it has no other child,
as a master that stops after its workers has none either."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from conftest import wait_for

from accept_order.experiments.observe.api import observe
from accept_order.experiments.observe.result import ObserveResult
from accept_order.servers.launched.gunicorn import gunicorn_missing
from accept_order.servers.watched import proc_state

MAX_REQUESTS = 10
TIMEOUT_S = 60.0

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def fetch(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        while sock.recv(65536):
            pass


def _answers(port: int) -> bool:
    try:
        fetch(port)
    except OSError:
        return False
    return True


def test_observe_ends_when_its_worker_is_a_zombie(tmp_path: Path, free_port: int) -> None:
    argv = [sys.executable, "-m", "gunicorn", "-w", "1", "-k", "gthread", "--max-requests", str(MAX_REQUESTS)]
    argv += ["-b", f"127.0.0.1:{free_port}", "accept_order.servers.launched.gunicorn_app:app"]
    # HOME and XDG_RUNTIME_DIR: gunicorn 24+'s control socket in the test's directory
    env = {**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)}
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path, env=env)
    stop, out = threading.Event(), list[object]()
    try:
        master = psutil.Process(server.pid)
        (worker,) = wait_for(lambda: [c.pid for c in master.children()], lambda w: len(w) == 1, 60, "one worker")
        wait_for(lambda: _answers(free_port), bool, 60, "gunicorn to answer")  # its first answer
        began = threading.Event()

        def run() -> None:
            try:
                out.append(observe(port=free_port, duration_s=600, on_snapshot=lambda _r: began.set(), until=stop))
            except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
                out.append(exc)
                began.set()

        watcher = threading.Thread(target=run, daemon=True)
        watcher.start()
        assert began.wait(TIMEOUT_S), "observe did not start"
        for _ in range(MAX_REQUESTS - 2):
            fetch(free_port)
        os.kill(server.pid, signal.SIGSTOP)  # the master reaps no more
        try:
            fetch(free_port)  # the worker's last answer: it exits after it
            wait_for(lambda: proc_state(worker), lambda state: state == "Z", TIMEOUT_S, "the worker to be a zombie")
            watcher.join(TIMEOUT_S)
            ended = not watcher.is_alive()
            assert proc_state(worker) == "Z", "the worker was reaped meanwhile: the master ran"
        finally:
            os.kill(server.pid, signal.SIGCONT)
        assert ended, "observe did not end when its worker exited (a zombie not yet reaped)"
    finally:
        stop.set()
        server.terminate()
        server.wait(timeout=30)
    (result,) = out
    if isinstance(result, BaseException):
        raise result
    assert isinstance(result, ObserveResult)
    assert result.workers[0].exited_s is not None, result.workers
    # the master, stopped, had replaced no one: observe does not say it did
    notes = " ".join(result.notes)
    assert "replaced them are not watched" not in notes and f"master (pid {server.pid}) has no other" in notes, notes
