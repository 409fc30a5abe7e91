"""observe of a gunicorn whose one worker leaves as it runs (--max-requests, common in production): PyPI's gunicorn,
one gthread worker, which leaves after its MAX_REQUESTS-th answer.

Replaced: observe ended when its last watched worker left, and said 'every worker had exited: the server stopped
while it was observed', where the master ran on with new workers (pgrep -P: two new ones). It says the master runs
on now, and that observe ended there because the replacements are not watched.

A zombie: observe ends when its last watched worker has exited, even while that worker is a zombie its master has
not reaped yet. Its ticks took a worker for gone only where its usage could not be read, and a zombie's can
(/proc/PID/stat, status and the process clock stay): a worker that exited under a master that does not reap it at
once (stopped, busy, or slow to wait) was watched on as though it served, to the end of --duration.
servers/watched.gone() counts the zombie state as gone, and observe asks it of every worker at each tick. Here the
master is stopped (SIGSTOP) before the worker answers its last request, so the worker stays a zombie (its /proc state
'Z', the witness) until the master runs again. The note then does not say the master replaced its workers (87a3966's
words for a master that runs on): it has no other child, as a master that stops after its workers has none either."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from conftest import wait_for
from gunicorn_gthread import answers, fetch
from observed_while import observing, the_result

from accept_order.servers.launched.gunicorn import gunicorn_missing
from accept_order.servers.watched import proc_state

TIMEOUT_S = 120.0

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


@contextmanager
def one_worker_gunicorn(tmp_path: Path, port: int, max_requests: int) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """gunicorn, one gthread worker leaving after `max_requests` answers, once it has answered one: (master, worker).
    HOME and XDG_RUNTIME_DIR: gunicorn 24+'s control socket in the test's directory."""
    argv = [sys.executable, "-m", "gunicorn", "-w", "1", "-k", "gthread", "--max-requests", str(max_requests)]
    argv += ["-b", f"127.0.0.1:{port}", "accept_order.servers.launched.gunicorn_app:app"]
    env = {**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)}
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path, env=env)
    try:
        master = psutil.Process(server.pid)
        (worker,) = wait_for(lambda: [c.pid for c in master.children()], lambda w: len(w) == 1, 60, "one worker")
        wait_for(lambda: answers(port), bool, 60, "gunicorn to answer")  # its first answer
        yield server, worker
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_workers_replaced_while_observed_are_not_a_stopped_server(tmp_path: Path, free_port: int) -> None:
    max_requests, out = 20, list[object]()
    with one_worker_gunicorn(tmp_path, free_port, max_requests) as (server, first):
        watcher, began = observing(out, port=free_port, duration_s=TIMEOUT_S)
        assert began.wait(TIMEOUT_S), "observe did not start"
        for _ in range(max_requests):  # the worker's 20th answer is its last
            fetch(free_port)
        wait_for(lambda: psutil.pid_exists(first), lambda alive: not alive, 60, "the first worker to leave")
        watcher.join(TIMEOUT_S)  # it ends once its one worker has left
        assert not watcher.is_alive(), "observe did not end when its worker left"
        master = psutil.Process(server.pid)
        replaced = wait_for(lambda: [c.pid for c in master.children()], lambda w: w and first not in w, 60, "a new one")
        assert server.poll() is None and replaced, "the master runs on, on a new worker"
    notes = " ".join(the_result(out).notes)
    assert "the server stopped" not in notes, notes
    assert f"the master (pid {server.pid}) runs on" in notes, notes


def test_observe_ends_when_its_worker_is_a_zombie(tmp_path: Path, free_port: int) -> None:
    max_requests, stop, out = 10, threading.Event(), list[object]()
    try:
        with one_worker_gunicorn(tmp_path, free_port, max_requests) as (server, worker):
            watcher, began = observing(out, port=free_port, duration_s=600, until=stop)
            assert began.wait(TIMEOUT_S), "observe did not start"
            for _ in range(max_requests - 2):
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
    result = the_result(out)
    notes = " ".join(result.notes)
    assert result.workers[0].exited_s is not None, result.workers
    # the master, stopped, had replaced no one: observe does not say it did
    assert "replaced them are not watched" not in notes and f"master (pid {server.pid}) has no other" in notes, notes
