"""address_netns.locate reads only what tells: a namespace's listeners without the machine's every other socket
behind them in its tcp table, and where a connection is made to find where it lands, the namespaces it lands in
unless NAT sends it on before every other. Two namespaces holding 10.88.0.2 and listening, 6 namespaces on the
machine and 88-126k sockets in TIME_WAIT (load 7, Linux 6.18, 2 vCPUs): locate took 0.39-0.42 CPU-s, 14 reads of
tcp tables, and 0.10 after.
"""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
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


SHARED = f"10.87.{os.getpid() % 250 + 1}.2"  # this test's own: the /32 route to it is in this namespace
HOLDER = f"""
import socket, sys
listener = socket.create_server(({SHARED!r}, 18093), backlog=8)
print("up", flush=True)
sys.stdin.read()  # never accepts: its queue is the witness of a connection made to it
"""


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, timeout=30, capture_output=True)


@pytest.fixture
def two_holders() -> Iterator[tuple[subprocess.Popen[str], subprocess.Popen[str]]]:
    """SHARED held in two namespaces of their own, each with a listener on 18093 that never accepts: one
    reached from here straight over a veth (this namespace's /32 route), the other on its loopback, off the route."""
    tag = f"{os.getpid() % 100000}"
    reached, aside, link = f"aolr{tag}", f"aola{tag}", f"aolr{tag}"
    procs: list[subprocess.Popen[str]] = []
    try:
        for name in (reached, aside):
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
        _ip("link", "add", f"{link}h", "type", "veth", "peer", "name", link, "netns", reached)
        _ip("-n", reached, "addr", "add", f"{SHARED}/32", "dev", link)
        _ip("-n", reached, "link", "set", link, "up")
        _ip("-n", reached, "route", "add", "default", "dev", link)
        _ip("-n", aside, "addr", "add", f"{SHARED}/32", "dev", "lo")
        _ip("link", "set", f"{link}h", "up")
        _ip("route", "add", f"{SHARED}/32", "dev", f"{link}h")
        for name in (reached, aside):
            argv = ["ip", "netns", "exec", name, sys.executable, "-c", HOLDER]
            procs.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
            assert procs[-1].stdout is not None and procs[-1].stdout.readline() == "up\n"
        yield procs[0], procs[1]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(30)
        subprocess.run(["ip", "link", "delete", f"{link}h"], timeout=30, capture_output=True)
        for name in (reached, aside):
            subprocess.run(["ip", "netns", "delete", name], timeout=30, capture_output=True)


def _queued(pid: int) -> int:
    """The accept queue of the listener on 18093 in pid's namespace (its tcp table's rx_queue)."""
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[1].endswith(f":{18093:04X}"):
            return int(fields[4].split(":")[1], 16)
    raise AssertionError("no listener on 18093 there")


def test_two_holders_one_routed_straight_into_is_told_with_no_connection(
    two_holders: tuple[subprocess.Popen[str], subprocess.Popen[str]],
) -> None:
    """The route's veth names the holder: located there, and neither listener was sent a connection."""
    reached, aside = two_holders
    where = address_netns.locate(SHARED, 18093)
    assert where.routed and not where.landed and where.namespace == netstat_namespace(reached.pid), where
    assert where.holders == 2 and (_queued(reached.pid), _queued(aside.pid)) == (0, 0), where


def test_behind_nat_the_destination_s_holders_are_looked_in_before_every_namespace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not found where it lands unless NAT sends it on, conntrack says where NAT sent it: the namespaces holding
    that address are looked in next, and found there, no other is read."""
    sent = ("10.9.9.9", 80)
    looked: list[Any] = []

    def ends(client: Any, among: Any = None) -> list[landing.Landing]:
        looked.append(among)
        return [landing.Landing(namespace=7, pids=(70,), server=sent)] if among == {7} else []

    monkeypatch.setattr(landing, "_ends", ends)
    monkeypatch.setattr(landing, "conntrack_destination", lambda client, asked: sent)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = int(listener.getsockname()[1])
        landed = landing.land("127.0.0.1", port, {1}, lambda address: {7} if address == sent[0] else set())
    assert landed.namespace == 7 and looked == [{1}, {7}], (landed, looked)
