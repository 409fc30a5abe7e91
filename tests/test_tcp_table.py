"""tests/tcp_table.py's kernel-side port filter answers what /proc/net/tcp's rows answer: a listener alone is no
connection, an established one and its TIME_WAIT are (at either end), a socket only bound (CLOSE, which
the kernel's dump lists and /proc/net/tcp does not) is none either, IPv6 as IPv4."""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import traceback
from collections.abc import Callable

import pytest
from conftest import needs_ipv6
from tcp_table import connection_on

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def in_a_namespace_of_its_own(check: Callable[[], None]) -> None:
    """`check` in a forked child in a network namespace of its own, its loopback up. The host's holds the suite's
    30,000-45,000 TIME_WAITs, among them some toward nearly any client port (14,000 distinct peer ports here): a
    question about a client's port found them, so a filter that never matched the local port still passed."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery after a fork; what happened goes back through the pipe
        said = "ok"
        try:
            if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWNET) != 0:
                said = f"skip: unshare(CLONE_NEWNET): {os.strerror(ctypes.get_errno())}"
            else:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                    flags = struct.unpack("16sh", fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack("16sh", b"lo", 0)))[1]
                    fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))
                check()
        except BaseException:
            said = traceback.format_exc()
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        said = pipe.read()
    assert os.waitpid(pid, 0)[1] == 0
    if said.startswith("skip: "):
        pytest.skip(said[len("skip: ") :])
    assert said == "ok", said


def proc_rows_on(port: int) -> bool:
    """The same question of /proc/net/tcp{,6} (slow where TIME_WAITs abound): a row not in LISTEN (0A) on `port`."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                row = line.split()
                ports = (int(row[1].rsplit(":", 1)[1], 16), int(row[2].rsplit(":", 1)[1], 16))
                if row[3] != "0A" and port in ports:
                    return True
    return False


@pytest.mark.parametrize(
    "family, host", [(socket.AF_INET, "127.0.0.1"), pytest.param(socket.AF_INET6, "::1", marks=needs_ipv6)]
)
def test_a_connection_and_its_time_wait_are_found_at_either_end_and_a_listener_is_not(family: int, host: str) -> None:
    in_a_namespace_of_its_own(lambda: _found_at_either_end(family, host))


def _found_at_either_end(family: int, host: str) -> None:
    with socket.socket(family) as listener:
        listener.bind((host, 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not connection_on(port)
        client = socket.create_connection((host, port))
        accepted, _ = listener.accept()
        client_port = client.getsockname()[1]
        assert connection_on(port) and connection_on(client_port)  # the server's end and the client's
        assert proc_rows_on(port) and proc_rows_on(client_port)
        client.close()  # the client closes first: its end waits in TIME_WAIT
        accepted.close()
        # the client's TIME_WAIT: its own port at the local end, the server's at the remote
        assert connection_on(client_port) and connection_on(port) and proc_rows_on(port)
    with socket.socket(family) as bound:  # a port held and never connected (a server between bind and listen)
        bound.bind((host, 0))
        assert not connection_on(bound.getsockname()[1])
