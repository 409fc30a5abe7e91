"""8bd1c25 (probes/accept_waits.py): uWSGI without a master is a parent that is a worker and children
that are workers too, all holding the listener. Under --thunder-lock only the lock's holder waits on the listener;
the others sleep in the lock. Where the parent held it, 8bd1c25 read the parent as a per-connection forker (it waits
on the listener, no child does) and its children as connections' children: observe and latency --attach read the
parent as the one worker (1 look in 3 idle, 1 in 40 under wrk -c16), where the parent commit read the children.

Witnesses the tool did not produce: the server's replies (each names the worker that served it: the child serves
connections, so it accepts them), and /proc (the parent asleep in epoll_wait, the child in the lock's futex)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import wait_for
from pyuwsgi_started import HOST, TIMEOUT_S, masterless

from accept_order.experiments.observe.server import find_server
from accept_order.probes.accept_waits import forks_per_connection
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.owner import socket_holders
from accept_order.probes.proc_waits import EPOLL_WAITS, thread_wait
from accept_order.servers.attached_workers import worker_pids
from accept_order.servers.launched.uwsgi import uwsgi_missing
from accept_order.servers.registry import HELPERS

APP = """import os
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [f"worker {os.getpid()}".encode()]
"""


def _ask(port: int) -> int:
    """One request; the pid its reply names."""
    with socket.create_connection((HOST, port), timeout=TIMEOUT_S) as conn:
        conn.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
    return int(reply.rsplit(b"worker ", 1)[1])


@pytest.fixture
def masterless_uwsgi(tmp_path: Path, free_port: int) -> Iterator[tuple[int, int]]:
    """pyuwsgi without a master, two processes under --thunder-lock: (parent, child) once both are in their waits."""
    options = f"--thunder-lock --http-socket {HOST}:{free_port} --wsgi-file app.py --disable-logging"
    with masterless(tmp_path, APP, options, output=tmp_path / "log") as (parent, child):
        pids = [parent, child]
        wait_for(lambda: [thread_wait(p, p).call for p in pids], lambda now: "running" not in now, TIMEOUT_S, "idle")
        yield parent, child


@pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI: {uwsgi_missing()}")
def test_a_masterless_uwsgi_whose_parent_holds_the_lock_keeps_its_child_a_worker(
    masterless_uwsgi: tuple[int, int], free_port: int
) -> None:
    parent, child = masterless_uwsgi
    served: set[int] = set()

    def parent_holds_the_lock() -> tuple[str, str]:
        served.add(_ask(free_port))  # the lock moves on at each request; idle, it stays where it went
        return wait_for(
            lambda: (thread_wait(parent, parent).call, thread_wait(child, child).call),
            lambda now: "running" not in now,
            TIMEOUT_S,
            "both back in their waits",
        )

    wait_for(
        parent_holds_the_lock,
        lambda now: now[0] in EPOLL_WAITS and now[1] == "futex" and child in served,
        TIMEOUT_S,
        "the parent waiting on the listener, the child in the lock (having served)",
    )
    inodes = {row.inode for row in listening_sockets(free_port)}
    holders = socket_holders(inodes, [parent, child])
    assert set(holders) == {parent, child}  # /proc: both hold the listener
    listeners = holders[parent]

    assert not forks_per_connection(parent, [child], listeners)
    assert child in [unit.pid for unit in find_server(port=free_port).units]
    assert child in worker_pids([parent], HOST, free_port, helpers=HELPERS)


def test_one_look_is_not_enough_under_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under load uWSGI's lock moves at each request: at one look the parent may hold it while the child serves a
    connection (1 look in 40 under wrk -c16), at the next the child waits on the listener. The looks must agree."""
    from accept_order.probes import accept_waits

    parent, child = 1, 2
    looks = {parent: [(True, True, False, True)] * 3, child: [(True, False, True, True), (True, True, False, True)]}
    monkeypatch.setattr(accept_waits, "_waits", lambda pid, listeners: looks[pid].pop(0))
    monkeypatch.setattr(accept_waits, "LOOK_EVERY_S", 0)
    assert not accept_waits.forks_per_connection(parent, [child], {7})
    looks = {parent: [(True, True, False, True)] * 3, child: [(True, False, True, True)] * 3}  # ForkingMixIn: agree
    assert accept_waits.forks_per_connection(parent, [child], {7})


def test_a_parent_whose_waits_are_not_ours_to_read_is_answered_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc/PID/syscall needs ptrace access (Yama's ptrace_scope 1 refuses it to the same user, not root): every
    thread reads 'unknown', which was never asleep, so each reading of such a master looked 100 times over 0.5 s
    (each young master's reading, 10 a second) before it said no."""
    from accept_order.probes import accept_waits
    from accept_order.probes.proc_waits import ThreadWait

    looks: list[int] = []
    monkeypatch.setattr(
        accept_waits, "thread_wait", lambda pid, tid, name: looks.append(tid) or ThreadWait(tid, "", "unknown")
    )
    assert not accept_waits.forks_per_connection(os.getpid(), [], set())
    assert looks and len(looks) == len(set(looks))  # one look: each thread once
