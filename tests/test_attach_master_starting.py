"""A master attached while it still starts its workers: gunicorn -w 3 (PyPI's) listens in its master, then forks its
workers one by one (its own sleep of up to 0.1 s between two, and its pre_fork hook's time, here a config's 0.3 s).
Attached in between, the master alone held the listener and read as its own one worker, or a worker or two of three
were read as all of them ('expected 1 workers, found 3' at the run's start, or a run modelled on too few). The
reading now waits, bounded, until it has settled (servers/attached_start.py).

Witnesses the tool did not produce: /proc (the pids read hold the listener, the master's children), gunicorn's own
log (it names each worker it booted) and its replies (`worker PID` from the application, each a pid read)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import child_processes, wait_for

from accept_order.experiments.observe.server import find_server
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.owner import socket_holders
from accept_order.servers import attached_start
from accept_order.servers.attached_start import starting
from accept_order.servers.attached_workers import worker_pids
from accept_order.servers.registry import HELPERS

pytest.importorskip("gunicorn")

TIMEOUT_S = 30.0
HOST = "127.0.0.1"
WORKERS = 3
NO_PID = (1 << 22) + 1  # above the largest pid_max: no process has it

APP = """import os


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Connection", "close")])
    return [f"worker {os.getpid()}\\n".encode()]
"""
CONFIG = """import time


def pre_fork(server, worker):  # a hook's work before each worker is forked (gunicorn's own setting)
    time.sleep(0.3)
"""
BOOTED = re.compile(r"Booting worker with pid: (\d+)")


def _listener_inode(pid: int, port: int) -> set[int]:
    """The listening socket on `port` if `pid`'s fd table holds it (/proc/PID/fd)."""
    return set(socket_holders({row.inode for row in listening_sockets(port)}, [pid]).get(pid, set()))


@pytest.fixture
def gunicorn_starting(tmp_path: Path, free_port: int) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    (tmp_path / "wsgi_app.py").write_text(APP)
    (tmp_path / "conf.py").write_text(CONFIG)
    log = tmp_path / "error.log"
    argv = [sys.executable, "-m", "gunicorn", "--chdir", str(tmp_path), "-c", str(tmp_path / "conf.py")]
    argv += ["-w", str(WORKERS), "-b", f"{HOST}:{free_port}", "--error-logfile", str(log), "wsgi_app:app"]
    # HOME and XDG_RUNTIME_DIR: gunicorn 24+'s control socket (~/.gunicorn/gunicorn.ctl) in the test's directory
    env = {**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)}
    proc = subprocess.Popen(argv, start_new_session=True, env=env)
    try:
        yield proc, free_port, log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # its own session: the master and its workers
        proc.wait(TIMEOUT_S)
        wait_for(lambda: _group_alive(proc.pid), lambda alive: not alive, TIMEOUT_S, "gunicorn's processes to end")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _fetch(port: int) -> int:
    with socket.create_connection((HOST, port), timeout=TIMEOUT_S) as conn:
        conn.sendall(f"GET / HTTP/1.0\r\nHost: {HOST}\r\n\r\n".encode())
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
    return int(reply.rsplit(b"worker ", 1)[1].split()[0])


def test_a_master_attached_before_it_has_forked_its_workers_is_waited_for(
    gunicorn_starting: tuple[subprocess.Popen[bytes], int, Path],
) -> None:
    proc, port, log = gunicorn_starting
    master = proc.pid
    wait_for(lambda: _listener_inode(master, port), bool, TIMEOUT_S, "gunicorn's master to listen")
    began = time.monotonic()
    workers = worker_pids([master], HOST, port, helpers=HELPERS)
    waited = time.monotonic() - began
    assert len(workers) == WORKERS, (workers, waited)
    assert master not in workers
    listener = _listener_inode(master, port)
    assert set(socket_holders(listener, workers)) == set(workers)  # /proc: each holds the supervisor's listener
    assert {c.pid for c in child_processes(master)} >= set(workers)
    assert waited < attached_start.STARTING_S + 1.0  # bounded
    booted = wait_for(lambda: BOOTED.findall(log.read_text()), lambda b: len(b) == WORKERS, TIMEOUT_S, "the log")
    assert sorted(map(int, booted)) == sorted(workers)  # gunicorn's own word for its workers
    answered = wait_for(lambda: {_fetch(port) for _ in range(20)}, bool, TIMEOUT_S, "a reply")
    assert answered <= set(workers), (answered, workers)  # the application's own pid in each reply


def test_a_child_that_may_be_a_worker_starting_is_young_unengaged_and_no_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A young child that neither holds the listener nor is fed may be a worker importing its application; not where
    the master does not hold the listener, nor a helper, nor a child that has lived STARTING_S."""
    helper = lambda pid: False  # noqa: E731
    monkeypatch.setattr(attached_start, "age_s", lambda pid: 0.2)
    assert starting(1, [NO_PID], set(), True, helper)
    assert not starting(1, [NO_PID], {NO_PID}, True, helper)  # it holds the listener (or is fed)
    assert not starting(1, [NO_PID], set(), False, helper)
    assert not starting(1, [NO_PID], set(), True, lambda pid: True)  # a named helper
    assert not starting(1, [], set(), True, helper)
    monkeypatch.setattr(attached_start, "age_s", lambda pid: attached_start.STARTING_S + 1)
    assert not starting(1, [NO_PID], set(), True, helper)


def test_an_old_master_is_read_at_once_and_a_young_one_once_its_reading_settles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forked = [[], [11], [11], [11, 12], [11, 12, 13]]  # a young master forking its workers, as readings show it
    reads: list[list[int]] = []

    def read(children: list[int]) -> tuple[list[int], bool, set[int]]:
        serving = forked[min(len(reads), len(forked) - 1)]
        reads.append(serving)
        return serving, True, set(serving)

    monkeypatch.setattr(attached_start, "children_of", lambda pid: [])
    monkeypatch.setattr(attached_start, "_SETTLED", set())
    monkeypatch.setattr(attached_start, "age_s", lambda pid: attached_start.STARTING_S + 1)
    assert attached_start.settled_workers(1, read, lambda pid: False) == []  # old: its reading is taken at once
    assert len(reads) == 1
    reads.clear()
    monkeypatch.setattr(attached_start, "age_s", lambda pid: 0.1)
    began = time.monotonic()
    assert attached_start.settled_workers(1, read, lambda pid: False) == [11, 12, 13]
    assert time.monotonic() - began >= attached_start.SETTLE_S  # the last reading held SETTLE_S
    reads.clear()
    forked[:] = [[11, 12, 13]]
    assert attached_start.settled_workers(1, read, lambda pid: False) == [11, 12, 13]  # the same master, settled:
    assert len(reads) == 1  # the server's start reads it at once after the command line's reading
    reads.clear()
    monkeypatch.setattr(attached_start, "_SETTLED", set())
    forked[:] = [[11], [11, 12], [11], [11, 12]]  # never settles: bounded
    assert attached_start.settled_workers(1, read, lambda pid: False, limit_s=0.2) in ([11], [11, 12])


def test_observe_of_a_master_still_forking_its_workers_finds_every_one(
    gunicorn_starting: tuple[subprocess.Popen[bytes], int, Path],
) -> None:
    """observe's reading of the server by its master's pid: the same wait."""
    proc, port, log = gunicorn_starting
    wait_for(lambda: _listener_inode(proc.pid, port), bool, TIMEOUT_S, "gunicorn's master to listen")
    watched = find_server(proc.pid)
    booted = wait_for(lambda: BOOTED.findall(log.read_text()), lambda b: len(b) == WORKERS, TIMEOUT_S, "the log")
    assert watched.master == proc.pid and sorted(watched.workers) == sorted(map(int, booted)), watched
