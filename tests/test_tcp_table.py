"""tests/tcp_table.py's kernel-side port filter answers what /proc/net/tcp's rows answer: a listener alone is no
connection, an established one and its TIME_WAIT are (at either end), a socket only bound (CLOSE, which
the kernel's dump lists and /proc/net/tcp does not) is none either, IPv6 as IPv4."""

from __future__ import annotations

import socket

import pytest
from conftest import needs_ipv6
from tcp_table import connection_on


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
