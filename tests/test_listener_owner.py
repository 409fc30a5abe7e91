"""Who holds a taken port, for `run`/`serve`'s error line (servers/modes/base.py listener_owner): the last holder in
/proc's order, as psutil.net_connections named it before, found without reading every process's descriptors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from accept_order.servers.modes.base import listener_owner


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock


def test_the_holder_is_named_by_pid_and_name(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    name = open(f"/proc/{os.getpid()}/comm").read().strip()  # psutil's name: comm, or argv's when comm is cut
    assert listener_owner("127.0.0.1", port) == f"pid {os.getpid()} ({name})"


def test_of_several_holders_the_last_in_procs_order(listener: socket.socket) -> None:
    """Children that inherited the listener hold it too (a pre-forked server): the one /proc lists last is named,
    as psutil.net_connections did (its table of inodes kept each one's last holder)."""
    port = listener.getsockname()[1]
    sleep = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # ends when its stdin closes
    children = [subprocess.Popen(sleep, stdin=subprocess.PIPE, pass_fds=[listener.fileno()]) for _ in range(2)]
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        last = [p for p in pids if p in {os.getpid(), *(c.pid for c in children)}][-1]
        assert listener_owner("127.0.0.1", port).startswith(f"pid {last} ("), pids
    finally:
        for child in children:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(30)


def test_a_port_nobody_listens_on_is_another_process() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: no listener on this port
        assert listener_owner("127.0.0.1", sock.getsockname()[1]) == "another process"


def test_a_connected_socket_on_the_port_is_not_a_listener(listener: socket.socket) -> None:
    """Only a LISTEN row counts: a client whose own port happens to be the one asked about is not its holder."""
    with socket.create_connection(listener.getsockname()) as client:
        accepted, _ = listener.accept()
        with accepted:
            assert listener_owner("127.0.0.1", client.getsockname()[1]) == "another process"
