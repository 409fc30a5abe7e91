"""A socketserver ForkingMixIn server (Python's own, unchanged) attached by pid while connections are open: its
children, forked one per connection after the parent accepted it, hold the listener they inherited, and were
taken for its workers (`observe`, `latency --attach`: '3 workers' of a server whose one accepting process is the
parent; latency's check refused it or attached to children that exit with their connection). The parent waits on
the listener in poll() and the children never do: the parent is the worker (probes/accept_waits.py).

Witnesses the tool did not produce: /proc (the children are the parent's and hold the listener), the server's own
replies (each connection answered by a child's pid) and the kernel's accept count (bpftrace: the parent accepted
every one, the children none)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import child_processes, wait_for

from accept_order.experiments.observe.run import observe
from accept_order.experiments.observe.server import find_server
from accept_order.probes.accept_waits import forks_per_connection
from accept_order.probes.accepts import AcceptCounter
from accept_order.probes.owner import socket_holders
from accept_order.servers.attached_listening import check_listening
from accept_order.servers.attached_workers import worker_pids
from accept_order.servers.registry import HELPERS

TIMEOUT_S = 20.0
HOST = "127.0.0.1"
HELD_FROM = "127.0.0.2"  # the server keeps a connection from here open until the client closes it
HELD = 2

SERVER = f'''
import os, socketserver, sys

class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(f"worker {{os.getpid()}}\\n".encode())
        self.wfile.flush()
        if self.client_address[0] == "{HELD_FROM}":
            self.rfile.read()  # until the client closes

class Server(socketserver.ForkingMixIn, socketserver.TCPServer):
    allow_reuse_address = True

with Server(("{HOST}", 0), Handler) as server:
    print(server.server_address[1], flush=True)
    server.serve_forever()
'''


@dataclass
class Forking:
    pid: int
    port: int
    held: list[socket.socket]

    def children(self) -> list[int]:
        return [p.pid for p in child_processes(self.pid)]


@pytest.fixture
def forking(tmp_path: Path) -> Iterator[Forking]:
    script = tmp_path / "forking.py"
    script.write_text(SERVER)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    held: list[socket.socket] = []
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        for _ in range(HELD):
            conn = socket.create_connection((HOST, port), timeout=TIMEOUT_S, source_address=(HELD_FROM, 0))
            held.append(conn)
            assert conn.recv(100).startswith(b"worker ")  # its child has it: it answered
        server = Forking(proc.pid, port, held)
        wait_for(server.children, lambda c: len(c) == HELD, TIMEOUT_S, f"{HELD} children of the forking server")
        yield server
    finally:
        for conn in held:
            conn.close()
        if proc.poll() is None:
            wait_for(lambda: child_processes(proc.pid), lambda c: not c, TIMEOUT_S, "the children to end")
        proc.terminate()
        proc.wait(TIMEOUT_S)
        if proc.stdout is not None:
            proc.stdout.close()


def _listener(port: int) -> set[int]:
    """The listening socket on `port`, from /proc/net/tcp (state 0A: LISTEN; the inode is its tenth field)."""
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return {int(row[9]) for row in rows if row[1].endswith(f":{port:04X}") and row[3] == "0A"}


def test_the_children_of_a_forking_server_hold_its_listener_and_are_not_its_workers(forking: Forking) -> None:
    children = forking.children()
    listener = _listener(forking.port)
    assert len(listener) == 1
    holders = socket_holders(listener, [forking.pid, *children])
    assert set(holders) == {forking.pid, *children}  # /proc: every child holds the listener, as the parent does
    assert worker_pids([forking.pid], HOST, forking.port, helpers=HELPERS) == [forking.pid]
    check_listening(HOST, forking.port, [forking.pid], [forking.pid], helpers=HELPERS)  # its children: not others
    watched = find_server(forking.pid)
    assert watched.workers == (forking.pid,) and watched.master is None, watched
    assert forks_per_connection(forking.pid, children, listener)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
def test_the_kernel_counts_the_parents_accepts_and_none_of_the_childrens(forking: Forking) -> None:
    """The witness: three more connections, each answered by a child (the server's own words), all accepted by the
    parent (the kernel's count), none by the children that were taken for workers."""
    children = forking.children()
    with AcceptCounter([forking.pid, *children]) as counter:
        counter.start()
        answered = []
        for _ in range(3):
            with socket.create_connection((HOST, forking.port), timeout=TIMEOUT_S) as conn:
                answered.append(int(conn.recv(100).split()[1]))
        counts = counter.stop()
    assert counts.available, counts.why
    assert forking.pid not in answered  # a child answered each
    assert counts.counts == {forking.pid: 3, **{child: 0 for child in children}}, counts
    assert worker_pids([forking.pid], HOST, forking.port, helpers=HELPERS) == [forking.pid]


@pytest.mark.parametrize("trace", [False, True], ids=["sampled", "traced"])
def test_observe_counts_the_connections_its_children_hold_for_the_parent(forking: Forking, trace: bool) -> None:
    """The parent is the one worker, and the connections are held by the children it forked for them: observe
    counted none held ('held 0', 'no connection was open at a sample') while /proc showed each child holding one."""
    children = forking.children()
    held = [_established(child, forking.port) for child in children]
    assert all(len(inodes) == 1 for inodes in held), held  # /proc: a connection each, in each child's fd table
    result = observe(forking.pid, duration_s=0.5, interval_s=0.25, trace=trace)
    assert [w.pid for w in result.workers] == [forking.pid] and result.master is None
    assert result.workers[0].connections_held == HELD, result.workers
    if not trace:  # sampled from the fd tables: the connections seen held are the children's
        assert result.workers[0].seen == HELD, result.workers


def _established(pid: int, port: int) -> set[int]:
    """The sockets on `port` in pid's fd table that are not the listener (/proc/net/tcp state 01: established)."""
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    ours = {int(row[9]) for row in rows if row[1].endswith(f":{port:04X}") and row[3] == "01"}
    return _socket_inodes(pid) & ours


def _socket_inodes(pid: int) -> set[int]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        link = os.readlink(f"/proc/{pid}/fd/{fd}")
        if link.startswith("socket:["):
            found.add(int(link[8:-1]))
    return found
