"""db19a26 (probes/accept_waits.parent_accepts): uWSGI without --master whose child serves a long request
while the parent waits on the listener read as a per-connection forker (FORKS): the parent waiting, the child not
waiting and holding a connection, at three looks, as a ForkingMixIn child does. observe then watched the parent
alone ('forking') and latency --attach attached it alone: the child, a worker, was left out (4 readings of 4 with a
6 s request). What tells them apart is the kernel's: each uWSGI worker runs its own epoll on the listener, made
after the fork (kcmp: no open file of the parent's), which it keeps while serving; a per-connection child has none.

Witnesses the tool did not produce: the app's own mark of the pid that holds the request, uWSGI's log (worker 2 is
the child), and /proc."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import wait_for
from pyuwsgi_started import HOST, TIMEOUT_S, masterless, pyuwsgi

from accept_order.experiments.observe.server import find_server
from accept_order.probes.accept_waits import FORKS, SERVES, parent_accepts
from accept_order.probes.fd_table import FdTables
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.owner import socket_holders
from accept_order.probes.proc_waits import EPOLL_WAITS, thread_wait
from accept_order.servers.attached_workers import worker_pids
from accept_order.servers.launched.uwsgi import uwsgi_missing
from accept_order.servers.registry import helpers

# /hold marks the pid that took it and serves it until the test releases that pid
APP = """import os, time
def application(environ, start_response):
    if environ["PATH_INFO"] == "/hold":
        here = os.path.dirname(os.path.abspath(__file__))
        open(os.path.join(here, f"held-{os.getpid()}"), "w").close()
        while not os.path.exists(os.path.join(here, f"release-{os.getpid()}")):
            time.sleep(0.01)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [f"worker {os.getpid()}".encode()]
"""

pytestmark = pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI: {uwsgi_missing()}")


@pytest.fixture
def masterless_uwsgi(tmp_path: Path, free_port: int) -> Iterator[tuple[int, int]]:
    """pyuwsgi --processes 2 without a master: (parent, child) once both wait for connections."""
    log = tmp_path / "uwsgi.log"
    options = f"--http-socket {HOST}:{free_port} --wsgi-file app.py --logto {log}"
    with masterless(tmp_path, APP, options) as (parent, child):
        try:
            spawned = wait_for(log.read_text, lambda text: "spawned uWSGI worker 2" in text, TIMEOUT_S, "both spawned")
            assert f"spawned uWSGI worker 2 (pid: {child}," in spawned  # uWSGI's own word: the child is a worker
            yield parent, child
        finally:
            for name in os.listdir(tmp_path):  # let a held request end
                if name.startswith("held-"):
                    (tmp_path / f"release-{name[5:]}").touch()


def _hold(port: int, tmp_path: Path, held: set[int]) -> tuple[socket.socket, int]:
    """A /hold request, and the pid that took it (the app's mark), once it has."""
    client = socket.create_connection((HOST, port), timeout=TIMEOUT_S)
    client.sendall(b"GET /hold HTTP/1.0\r\nHost: test\r\n\r\n")
    marks = wait_for(
        lambda: {int(n[5:]) for n in os.listdir(tmp_path) if n.startswith("held-")},
        lambda now: len(now - held) == 1,
        TIMEOUT_S,
        "the request taken",
    )
    return client, (marks - held).pop()


def _held_by(holder: int, other: int, port: int, tmp_path: Path, clients: list[socket.socket]) -> None:
    """A /hold request served by `holder`: where `other` takes the first, the next goes to `holder` (the one
    waiting), and `other` is let go."""
    client, taker = _hold(port, tmp_path, set())
    clients.append(client)
    if taker == other:
        client, taker = _hold(port, tmp_path, {other})
        clients.append(client)
        (tmp_path / f"release-{other}").touch()
    assert taker == holder


def _release(tmp_path: Path, clients: list[socket.socket]) -> None:
    for name in os.listdir(tmp_path):
        if name.startswith("held-"):
            (tmp_path / f"release-{name[5:]}").touch()
    for client in clients:
        client.close()


def test_a_masterless_uwsgi_whose_child_serves_while_the_parent_waits_keeps_both(
    masterless_uwsgi: tuple[int, int], free_port: int, tmp_path: Path
) -> None:
    parent, child = masterless_uwsgi
    clients: list[socket.socket] = []
    try:
        _held_by(child, parent, free_port, tmp_path, clients)
        wait_for(
            lambda: thread_wait(parent, parent).call, lambda now: now in EPOLL_WAITS, TIMEOUT_S, "the parent's wait"
        )
        listeners = {row.inode for row in listening_sockets(free_port)}
        holders = socket_holders(listeners, [parent, child])
        assert set(holders) == {parent, child}  # /proc: both hold the listener
        own = [f for f in FdTables().files(child).values() if f.kind == "eventpoll" and f.watching(listeners)]
        assert own, "the child's epoll on the listener"  # what tells it from a per-connection child

        assert parent_accepts(parent, [child], holders[parent]) == SERVES
        watched = find_server(port=free_port)
        assert watched.workers == (parent, child) and watched.master is None and not watched.forking, watched
        assert worker_pids([parent], HOST, free_port, helpers=helpers()) == [parent, child]
        assert (tmp_path / f"held-{child}").exists() and not (tmp_path / f"release-{child}").exists()  # still held
    finally:
        _release(tmp_path, clients)


def test_a_masterless_uwsgi_whose_parent_serves_while_the_child_waits_keeps_both(
    masterless_uwsgi: tuple[int, int], free_port: int, tmp_path: Path
) -> None:
    """The parent asleep in its request (the app's sleep), not on the listener, was its child's master: None at the
    first look. It runs an epoll on the listener, as the child does one of its own."""
    parent, child = masterless_uwsgi
    clients: list[socket.socket] = []
    try:
        _held_by(parent, child, free_port, tmp_path, clients)
        wait_for(lambda: thread_wait(child, child).call, lambda now: now in EPOLL_WAITS, TIMEOUT_S, "the child's wait")
        listeners = {row.inode for row in listening_sockets(free_port)}
        holders = socket_holders(listeners, [parent, child])
        assert set(holders) == {parent, child}  # /proc: both hold the listener

        assert parent_accepts(parent, [child], holders[parent]) == SERVES
        watched = find_server(port=free_port)
        assert watched.workers == (parent, child) and watched.master is None, watched
        assert worker_pids([parent], HOST, free_port, helpers=helpers()) == [parent, child]
        assert (tmp_path / f"held-{parent}").exists() and not (tmp_path / f"release-{parent}").exists()  # still held
    finally:
        _release(tmp_path, clients)


# a per-connection forker whose loop is an epoll: each child inherits it (one open file with the parent's, watching the
# listener), which is no loop of its own
FORKER = """
import os, select, socket, sys
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
loop = select.epoll()
loop.register(listener.fileno(), select.EPOLLIN)
print(listener.getsockname()[1], flush=True)
while True:
    loop.poll()
    conn, _ = listener.accept()
    if os.fork() == 0:
        conn.sendall(f"worker {os.getpid()}\\n".encode())
        conn.recv(1)  # until the client closes
        os._exit(0)
    conn.close()
"""


def test_an_epoll_forkers_child_inherits_the_parents_loop_and_is_no_worker(tmp_path: Path) -> None:
    script = tmp_path / "forker.py"
    script.write_text(FORKER)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        with socket.create_connection((HOST, port), timeout=TIMEOUT_S) as conn:
            child = int(conn.recv(100).split()[1])  # the reply names the child forked for it
            wait_for(
                lambda: thread_wait(proc.pid, proc.pid).call, lambda now: now in EPOLL_WAITS, TIMEOUT_S, "the wait"
            )
            listeners = {row.inode for row in listening_sockets(port)}
            loops = [f for f in FdTables().files(child).values() if f.kind == "eventpoll" and f.watching(listeners)]
            assert loops  # the child holds an epoll on the listener: its parent's (kcmp tells)
            assert parent_accepts(proc.pid, [child], listeners) == FORKS
    finally:
        proc.kill()
        proc.wait(TIMEOUT_S)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_master_without_a_loop_on_the_listener_stays_the_master(tmp_path: Path, free_port: int) -> None:
    """uWSGI with --master: its workers run an epoll of their own on the listener, as masterless ones do, but the
    master, which holds the listener too, runs none; it accepts nothing (uWSGI's log: 'spawned uWSGI master')."""
    log = tmp_path / "uwsgi.log"
    options = f"--master --processes 2 --http-socket {HOST}:{free_port} --wsgi-file app.py --logto {log}"
    with pyuwsgi(tmp_path, APP, options) as first:
        spawned = wait_for(
            lambda: log.read_text() if log.exists() else "",
            lambda text: "spawned uWSGI worker 2" in text,
            TIMEOUT_S,
            "both spawned",
        )
        assert f"spawned uWSGI master process (pid: {first.pid})" in spawned  # uWSGI's own word
        workers = sorted(p.pid for p in psutil.Process(first.pid).children())
        listeners = {row.inode for row in listening_sockets(free_port)}
        holders = wait_for(
            lambda: socket_holders(listeners, [first.pid, *workers]),
            lambda now: set(now) == {first.pid, *workers},
            TIMEOUT_S,
            "the master and its workers holding the listener",
        )

        def loops(pid: int) -> list[int]:
            return [f.fd for f in FdTables().files(pid).values() if f.kind == "eventpoll" and f.watching(listeners)]

        # each worker's loop on the listener, its own, once both run it; the master's none
        wait_for(lambda: [loops(w) for w in workers], all, TIMEOUT_S, "the workers' loops")
        assert loops(first.pid) == []
        assert parent_accepts(first.pid, workers, holders[first.pid]) is None
        watched = find_server(port=free_port)
        assert watched.master == first.pid and sorted(watched.workers) == workers, watched
