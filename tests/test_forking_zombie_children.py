"""db19a26 (probes/accept_waits.parent_accepts): a forking server's child that has served its connection
and exited, not yet reaped (a zombie: its files closed), read as asleep holding the listener alone, a worker waiting
its turn, so the parent was a worker beside its children (SERVES) and observe and --attach counted it and its
per-connection children as workers: 6 of 40 readings of Python's ForkingMixIn under load. A child holds the listener
while it waits its turn; one that holds it no more has left. Witnesses: the reply names the child, /proc its state
(Z) and its empty fd table, and the kernel's own listener table the listener the parent waits on."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import wait_for

from accept_order.probes.accept_waits import FORKS, parent_accepts
from accept_order.probes.fd_table import FdTables
from accept_order.probes.owner import socket_holders
from accept_order.probes.proc_waits import POLLS, SELECTS, thread_wait

HOST = "127.0.0.1"
TIMEOUT_S = 20.0

# serve_forever reaps its children (collect_children) each time its select wakes: once an hour here, so a child that
# has served its connection stays a zombie, as one does between two of its wakeups under load
SERVER = """
import os, socketserver

class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(f"worker {os.getpid()}\\n".encode())
        self.wfile.flush()
        self.rfile.read()  # until the client closes

class Server(socketserver.ForkingMixIn, socketserver.TCPServer):
    allow_reuse_address = True

with Server(("127.0.0.1", 0), Handler) as server:
    print(server.server_address[1], flush=True)
    server.serve_forever(poll_interval=3600)
"""


def _listener(port: int) -> int:
    """The listening socket's inode, from the kernel's own table (/proc/net/tcp: state 0A is LISTEN)."""
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return next(int(row[9]) for row in rows if row[3] == "0A" and int(row[1].split(":")[1], 16) == port)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def forking(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """The forking server's pid and port."""
    script = tmp_path / "forking.py"
    script.write_text(SERVER)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.pid, int(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait(TIMEOUT_S)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_forking_servers_exited_child_is_no_worker_waiting_its_turn(forking: tuple[int, int]) -> None:
    parent, port = forking
    listener = _listener(port)
    with socket.create_connection((HOST, port), timeout=TIMEOUT_S) as conn:
        child = int(conn.recv(100).split()[1])  # the reply names the child forked for this connection
        assert set(socket_holders({listener}, [parent, child])) == {parent, child}  # it held the listener, read so
    wait_for(lambda: _state(child), lambda now: now == "Z", TIMEOUT_S, "the child to exit, unreaped")
    assert os.listdir(f"/proc/{child}/fd") == []  # a zombie holds nothing
    wait_for(
        lambda: thread_wait(parent, parent).call, lambda now: now in POLLS | SELECTS, TIMEOUT_S, "the parent's select"
    )
    # the parent waits on the listener; its one child, read while it held the listener, has left since
    assert parent_accepts(parent, [child], {listener}) == FORKS
    assert _state(child) == "Z"  # still the parent's, unreaped, as it was throughout the looks


def test_a_forking_parent_seen_in_its_fork_is_looked_at_again(
    forking: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under load the parent is often in clone, copying its memory for the child of the connection it has just
    accepted (syscall 56, wchan dup_mmap, at 32 looks of 60 here): that is no sleep elsewhere (nginx's master in
    rt_sigsuspend), after which the parent is a master at once, its per-connection children taken for workers
    (36 readings of 60 under load). Its first looks here are such a fork; the real ones follow."""
    from accept_order.probes import accept_waits
    from accept_order.probes.proc_waits import ThreadWait

    parent, port = forking
    listener = _listener(port)
    with socket.create_connection((HOST, port), timeout=TIMEOUT_S) as conn:
        child = int(conn.recv(100).split()[1])
        wait_for(
            lambda: thread_wait(parent, parent).call,
            lambda now: now in POLLS | SELECTS,
            TIMEOUT_S,
            "the parent's select",
        )
        forks = [ThreadWait(parent, "", "clone", 56, wchan="dup_mmap")] * 2
        real = accept_waits.thread_wait
        monkeypatch.setattr(
            accept_waits,
            "thread_wait",
            lambda pid, tid, name=None: forks.pop() if pid == parent and forks else real(pid, tid, name=name),
        )
        assert parent_accepts(parent, [child], {listener}) == FORKS
        assert not forks  # both looks in the fork were taken


# a child that closes its connection and stays a while holding the listener, as one leaving does between closing its
# connection and closing its files (in exit_group, releasing its memory: wchan unlink_anon_vmas)
LEAVING = SERVER.replace(
    "self.rfile.read()  # until the client closes",
    "self.rfile.read()\n        self.rfile.close()\n        self.connection.close()\n"
    "        __import__('time').sleep(3600)",
)


def test_a_forking_servers_child_on_its_way_out_is_no_worker_waiting_its_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under load a child that has served its connection was seen asleep in exit_group (state D), its connection
    closed and the listener still held: a worker waiting its turn, so the parent served beside it (SERVES, 5 readings
    of 100). Here the child closes its connection and stays; its looks are exit_group's."""
    from accept_order.probes import accept_waits
    from accept_order.probes.proc_waits import ThreadWait

    script = tmp_path / "leaving.py"
    script.write_text(LEAVING)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        listener = _listener(port)
        with socket.create_connection((HOST, port), timeout=TIMEOUT_S) as conn:
            child = int(conn.recv(100).split()[1])
        wait_for(  # its connection closed, the listener still held: /proc
            lambda: (
                socket_holders({listener}, [proc.pid, child]).keys() == {proc.pid, child}
                and not any(f.kind == "socket" and f.inode != listener for f in FdTables().files(child).values())
            ),
            bool,
            TIMEOUT_S,
            "the child holding the listener alone",
        )
        wait_for(lambda: thread_wait(proc.pid, proc.pid).call, lambda now: now in POLLS | SELECTS, TIMEOUT_S, "wait")
        real = accept_waits.thread_wait
        monkeypatch.setattr(
            accept_waits,
            "thread_wait",
            lambda pid, tid, name=None: (
                ThreadWait(tid, "", "exit_group", 231, wchan="unlink_anon_vmas")
                if pid == child
                else real(pid, tid, name=name)
            ),
        )
        assert parent_accepts(proc.pid, [child], {listener}) == FORKS
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(TIMEOUT_S)
        if proc.stdout is not None:
            proc.stdout.close()
