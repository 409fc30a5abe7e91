"""Review RE of 0e01843 (inspect's 'busy' role: a worker serving a connection at the look). A forking server's
children, forked one per connection after its one process accepted it (Python's socketserver ForkingMixIn,
unchanged), hold the listener they inherited and serve their connection: they are not workers (8bd1c25), and
inspect read '1 worker' before 0e01843. Its busy pass took a worker's children for busy workers ('3 workers', two
of them 'busy: recvfrom'). Witnesses: /proc (the children are the parent's, each holds the listener), and each
connection's reply names the child that serves it."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import child_processes, wait_for

from accept_order.experiments.inspect.run import inspect
from accept_order.probes.owner import socket_holders
from accept_order.probes.proc_waits import thread_wait

HOST = "127.0.0.1"
HELD = 2
TIMEOUT_S = 20.0

SERVER = """
import os, socketserver

class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(f"worker {os.getpid()}\\n".encode())
        self.wfile.flush()
        self.rfile.read()  # until the client closes: the child serves its connection

class Server(socketserver.ForkingMixIn, socketserver.TCPServer):
    allow_reuse_address = True

with Server(("127.0.0.1", 0), Handler) as server:
    print(server.server_address[1], flush=True)
    server.serve_forever()
"""


def _listener(port: int) -> int:
    """The listening socket's inode, from the kernel's own table (/proc/net/tcp: state 0A is LISTEN)."""
    with open("/proc/net/tcp") as f:
        rows = [line.split() for line in f.readlines()[1:]]
    return next(int(row[9]) for row in rows if row[3] == "0A" and int(row[1].split(":")[1], 16) == port)


@pytest.fixture
def forking(tmp_path: Path) -> Iterator[tuple[int, int, list[int]]]:
    """The server's pid, its port, and the pids that answered its HELD open connections."""
    script = tmp_path / "forking.py"
    script.write_text(SERVER)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    held: list[socket.socket] = []
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        answered = []
        for _ in range(HELD):
            conn = socket.create_connection((HOST, port), timeout=TIMEOUT_S)
            held.append(conn)
            answered.append(int(conn.recv(100).split()[1]))
        yield proc.pid, port, answered
    finally:
        for conn in held:
            conn.close()
        proc.kill()
        proc.wait(TIMEOUT_S)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_forking_servers_per_connection_children_are_not_busy_workers(forking: tuple[int, int, list[int]]) -> None:
    pid, port, answered = forking
    children = wait_for(
        lambda: sorted(p.pid for p in child_processes(pid)), lambda now: now == sorted(answered), TIMEOUT_S, "children"
    )
    # the witnesses: each connection is a child's, and the children hold the listener beside their parent
    assert set(socket_holders({_listener(port)}, [pid, *children])) == {pid, *children}
    wait_for(lambda: [thread_wait(c, c).call for c in children], lambda now: "running" not in now, TIMEOUT_S, "read")
    wait_for(lambda: thread_wait(pid, pid).call, lambda now: now != "running", TIMEOUT_S, "the parent waits")
    result = inspect(port=port)
    assert [u.pid for u in result.units] == [pid], result.units  # three before: the children 'busy'
    assert result.workers == 1 and "busy" not in {u.role for u in result.units}
