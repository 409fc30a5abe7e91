"""observe names a serving parent's parent the master only where it is the same program.

A parent that accepts as its children do is their first worker (uWSGI without --master), and no master; 7bee996 made
its own parent the master where that holds the listener too, for Puma's --fork-worker (the master forks worker 0,
which forks the others and serves among them). But whatever started the server may hold the listener as well: systemd
holds a socket unit's listener, and is the parent of the service it starts. Named its master, such a process would be
said to be the server's ('python3, master <systemd>'), counted among what takes over a reload, and its exit said as
the master's. Puma's master and worker 0 are one program (the fork keeps the name); a holder that started the server
is another.

The processes are this test's own: a holder (named 'holder') that opens the listener and starts a Python server with
it, which forks two children, all three blocked in accept() on it (their kernel wait channel is the witness)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from cluster import dies_with
from conftest import wait_for

from accept_order.experiments.observe.server import find_server

TIMEOUT_S = 20.0
HOLDER = textwrap.dedent(
    """
    import ctypes, socket, subprocess, sys
    ctypes.CDLL(None).prctl(15, b"holder", 0, 0, 0)  # PR_SET_NAME: not the server's program
    listener = socket.create_server(("127.0.0.1", 0))
    server = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(listener.fileno())], pass_fds=[listener.fileno()])
    print(listener.getsockname()[1], server.pid, flush=True)
    sys.stdin.read()
    server.kill()
    """
)
SERVER = textwrap.dedent(
    """
    import os, socket, sys
    listener = socket.socket(fileno=int(sys.argv[1]))
    for _ in range(2):
        if os.fork() == 0:
            break
    while True:
        listener.accept()[0].close()
    """
)


def _accepting(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "inet_csk_accept"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_a_serving_parent_s_parent_of_another_program_is_no_master() -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=dies_with(os.getpid()),
    )
    try:
        assert holder.stdout is not None
        port, server = map(int, holder.stdout.readline().split())
        children = wait_for(lambda: _children(server), lambda c: len(c) == 2, TIMEOUT_S, "the server's 2 children")
        for pid in (server, *children):
            wait_for(lambda p=pid: _accepting(p), bool, TIMEOUT_S, f"pid {pid} blocked in accept()")
        watched = find_server(port=port)
    finally:
        os.killpg(holder.pid, 9)
        holder.wait(TIMEOUT_S)
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()
    assert sorted(watched.workers) == sorted([server, *children]), (watched, server, children)
    assert watched.master is None, (watched.master, holder.pid)  # the holder started it, and serves nothing
