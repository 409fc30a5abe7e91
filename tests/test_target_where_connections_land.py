"""A --target whose address two of this machine's network namespaces hold, or that NAT sends on, has its kernel
counters read where its connections land: one connection made to it is looked for in every namespace's tcp table
(probes/landing.py). Before, two holders were only described (nothing read), and a DNAT from this host's address
into a container read this host's counters, where no load's connection was queued.

The cluster's srv runs `accept-order serve --backlog 1`; a twin namespace holds srv's address too. The witness is
each namespace's own nstat (ip netns exec ... nstat), and the accept queue of a listener here that never accepts.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from cluster import Cluster, cluster_fixture
from network import needs_ipv6
from waiting import OutputReader, wait_for

from accept_order.core.spec import ServerSpec
from accept_order.probes import landing
from accept_order.probes.address_netns import Located, locate
from accept_order.probes.server_netns import netstat_namespace
from accept_order.servers.remote import RemoteServer

cluster = cluster_fixture(clients=0)
T = TypeVar("T")


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, timeout=30, capture_output=True)


def _overflows(namespace: str) -> int:
    argv = ["ip", "netns", "exec", namespace, "nstat", "-asz", "TcpExtListenOverflows"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if line.startswith("TcpExtListenOverflows"))


def _serve(namespace: str, host: str, port: int = 0) -> tuple[subprocess.Popen[str], int]:
    argv = ["ip", "netns", "exec", namespace, sys.executable, "-m", "accept_order", "serve", "-w", "1"]
    argv += ["--backlog", "1", "--host", host, "--port", str(port)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    READERS_OF[proc.pid] = reader = OutputReader(proc.stdout)  # type: ignore[arg-type]
    return proc, int(reader.wait_for(r"listening on \S+:(\d+)", 60).group(1))


READERS_OF: dict[int, OutputReader] = {}  # each serve's output, for its tally


def _accepted(proc: subprocess.Popen[str]) -> int:
    """How many connections serve's one worker accepted, as its tally says once SIGTERM stops it."""
    proc.terminate()
    proc.wait(60)
    said = READERS_OF.pop(proc.pid).finish(30)
    row = re.search(r"^\s+0\s+\d+\s+\d+\s+\S+\s+\d+\s+(\d+)\s", said, re.MULTILINE)
    assert row is not None, said
    return int(row.group(1))


def _in_netns(name: str, question: Callable[[], T]) -> T:
    """question() asked in a thread inside namespace `name`: a socket it makes stays there, held by this process,
    so that namespace has no process of its own for the tool to find it by."""
    libc = ctypes.CDLL(None, use_errno=True)
    outcome: list[T] = []

    def ask() -> None:
        fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
        try:
            assert libc.setns(fd, 0x40000000) == 0, os.strerror(ctypes.get_errno())
        finally:
            os.close(fd)
        outcome.append(question())

    thread = threading.Thread(target=ask)
    thread.start()
    thread.join(30)
    assert outcome, "the question in the namespace did not answer"
    return outcome[0]


@pytest.fixture
def twin(cluster: Cluster) -> Iterator[str]:
    """A namespace holding srv's address on a veth of its own, and this namespace's route to that address (a /32,
    longer than the bridge's /24) through it: the twin is the one a connection from here reaches."""
    name, link = f"aotw{os.getpid()}", f"aotw{os.getpid() % 100000}"
    address = cluster.address("srv")
    _ip("netns", "add", name)
    try:
        _ip("link", "add", f"{link}h", "type", "veth", "peer", "name", link, "netns", name)
        for argv in (["addr", "add", f"{address}/32", "dev", link], ["link", "set", link, "up"]):
            _ip("-n", name, *argv)
        _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", name, "route", "add", "default", "dev", link)
        _ip("link", "set", f"{link}h", "up")
        _ip("route", "add", f"{address}/32", "dev", f"{link}h", "src", cluster.bridge_address)
        yield name
    finally:
        subprocess.run(["ip", "link", "delete", f"{link}h"], timeout=30, capture_output=True)  # its route with it
        subprocess.run(["ip", "netns", "delete", name], timeout=30, capture_output=True)


def _burst(target: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        argv = [sys.executable, "-m", "accept_order", "burst", "--target", target, "--clients", "64", "-w", "1"]
        done = subprocess.run([*argv, "--json", str(out)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        (run,) = json.loads(out.read_text())["runs"]
        (cell,) = run["cells"]
        # how the run's file and report say whose counters the cell shows (none said: None, '')
        landed = run.get("counters_landed")
        return {**cell, "counters_landed": landed, "said": " ".join(done.stdout.split())}


def test_of_two_namespaces_holding_the_address_the_one_reached_is_read(cluster: Cluster, twin: str) -> None:
    """srv and the twin both hold the address and serve its port with a backlog of 1; the route sends this
    namespace's connections to the twin over its veth (whose pids come after srv's: the first holder found is not
    it), which this namespace's route tells with no connection made. The burst's overflows are the twin's (its
    nstat) and srv's moved none."""
    address = cluster.address("srv")
    srv, port = _serve(cluster.namespace("srv"), address)
    other, _ = _serve(twin, address, port)
    try:
        where = locate(address, port)
        assert where.routed and not where.landed and where.namespace == netstat_namespace(other.pid), where
        assert where.holders == 2 and where.sent_to is None and where.why is None, where
        before = _overflows(twin), _overflows(cluster.namespace("srv"))
        cell = _burst(f"{address}:{port}")
        moved = _overflows(twin) - before[0], _overflows(cluster.namespace("srv")) - before[1]
        accepted = _accepted(other), _accepted(srv)
    finally:
        for proc in (srv, other):
            proc.kill()
            proc.wait(30)
    assert moved[0] > 0 and moved[1] == 0, moved
    # the servers' own count: the twin's took every connection served, srv's none
    assert accepted[0] >= sum(cell["served"]) and accepted[1] == 0, (accepted, cell["served"])
    assert 0 < cell.get("counters", {}).get("TcpExtListenOverflows", 0) <= moved[0], (moved, cell.get("counters"))
    assert not cell.get("server_unread"), cell
    landed = "found by this namespace's route to it, a veth into that namespace; 2 of this machine's network namespaces"
    assert (
        cell["counters_landed"].startswith(landed)
        and f"kernel counters read in the server's network namespace, {landed}" in cell["said"]
    ), cell


def test_two_holders_neither_reached_is_said_not_known(cluster: Cluster, twin: str) -> None:
    """srv and a third namespace (on its loopback, off the route) hold the address and serve the port; the route
    reaches the twin, whose listener was made from here (it has no process for the tool to find it by). The
    connection lands where no namespace the tool sees is: nothing is read, and the why says which one the load's
    connections reach is not known, not 'elsewhere'."""
    address = cluster.address("srv")
    third = f"aotr{os.getpid()}"
    srv, port = _serve(cluster.namespace("srv"), address)
    listener = _in_netns(twin, lambda: socket.create_server((address, port)))
    _ip("netns", "add", third)
    aside = None
    try:
        _ip("-n", third, "addr", "add", f"{address}/32", "dev", "lo")
        _ip("-n", third, "link", "set", "lo", "up")
        aside, _ = _serve(third, address, port)
        where = locate(address, port)
        remote = RemoteServer(ServerSpec(kind="remote", mode="remote", host=address, port=port, workers=1))
        remote._located = where
        said = remote.unread_counters() or ""
    finally:
        listener.close()
        for proc in (srv, aside):
            if proc is not None:
                proc.kill()
                proc.wait(30)
        subprocess.run(["ip", "netns", "delete", third], timeout=30, capture_output=True)
    assert not where.ours and where.namespace is None and where.holders == 2, where
    assert "which one the load's connections reach is not known" in said and "elsewhere" not in said, said
    assert "seen in none of this machine's network namespaces" in said, said


@pytest.fixture
def dnat(cluster: Cluster) -> Iterator[Callable[[str, int], int]]:
    """nft's DNAT in this namespace's output hook from the bridge address's port P (free here) to srv's ADDRESS:PORT,
    as a container's published port is: dnat(ADDRESS, PORT) -> P."""
    if subprocess.run(["nft", "--version"], capture_output=True).returncode != 0:
        pytest.skip("nft is not installed (Debian's nftables)")
    table = f"aodnat{os.getpid()}"
    subprocess.run(["nft", "add", "table", "ip", table], check=True, timeout=30)

    def add(address: str, port: int) -> int:
        with socket.socket() as probe:
            probe.bind((cluster.bridge_address, 0))
            free = int(probe.getsockname()[1])
        chain = "{ type nat hook output priority -100 ; }"
        subprocess.run(["nft", "add", "chain", "ip", table, "out", chain], check=True, timeout=30)
        rule = f"ip daddr {cluster.bridge_address} tcp dport {free} dnat to {address}:{port}"
        subprocess.run(["nft", "add", "rule", "ip", table, "out", *rule.split()], check=True, timeout=30)
        return free

    try:
        yield add
    finally:
        subprocess.run(["nft", "delete", "table", "ip", table], timeout=30)


def test_this_host_s_own_address_with_its_listener_here_lands_here(cluster: Cluster) -> None:
    """No NAT: located here, and ours are read. Whether a connection was made to tell depends on a nat chain in this
    namespace, which other tests add (the dnat fixture): test_target_own_address_no_probe.py asks both, each in a
    namespace of its own."""
    with socket.create_server((cluster.bridge_address, 0)) as here:
        where = locate(cluster.bridge_address, int(here.getsockname()[1]))
    assert where.ours and where.why is None and where.sent_to is None, where


def _queued(listener: socket.socket) -> int:
    """How many connections wait in this namespace's listener's accept queue (the tcp table's rx_queue)."""
    port = f":{listener.getsockname()[1]:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(port) and fields[3] == "0A":
            return int(fields[4].split(":")[1], 16)
    raise AssertionError("the listener is not in /proc/net/tcp")


def test_a_dnated_target_has_the_container_s_counters_read(cluster: Cluster, dnat: Callable[[str, int], int]) -> None:
    """bridge:P DNATed to srv's server, and a listener here on P that never accepts (as a container's port proxy
    listens): the burst's overflows are srv's (its nstat), none of its connections queued here."""
    address = cluster.address("srv")
    srv, port = _serve(cluster.namespace("srv"), address)
    try:
        published = dnat(address, port)
        with socket.create_server((cluster.bridge_address, published), backlog=64) as here:
            where = locate(cluster.bridge_address, published)
            assert where.landed and where.namespace == netstat_namespace(srv.pid), where
            assert where.sent_to == (address, port) and where.why is None, where
            before = _overflows(cluster.namespace("srv"))
            cell = _burst(f"{cluster.bridge_address}:{published}")
            moved = _overflows(cluster.namespace("srv")) - before
            assert _queued(here) == 0
    finally:
        srv.kill()
        srv.wait(30)
    assert 0 < cell.get("counters", {}).get("TcpExtListenOverflows", 0) <= moved, (moved, cell.get("counters"))
    assert not cell.get("server_unread"), cell
    landed = f"found where a connection made to it before the load landed, DNATed to {address}:{port}"
    assert (
        cell["counters_landed"] == landed
        and f"kernel counters read in the server's network namespace, {landed}" in cell["said"]
    ), cell


def test_a_latency_run_at_a_dnated_target_says_where_it_landed(
    cluster: Cluster, dnat: Callable[[str, int], int]
) -> None:
    """The run's file keeps the namespace's counters, read through srv's process, and how that namespace was told;
    the report's counters line says it, beside the DNAT's destination."""
    address = cluster.address("srv")
    srv, port = _serve(cluster.namespace("srv"), address)
    try:
        published = dnat(address, port)
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "result.json"
            target = f"{cluster.bridge_address}:{published}"
            argv = [sys.executable, "-m", "accept_order", "latency", "--target", target, "-n", "400", "-c", "64"]
            before = _overflows(cluster.namespace("srv"))
            done = subprocess.run([*argv, "-w", "1", "--json", str(out)], capture_output=True, text=True, timeout=120)
            moved = _overflows(cluster.namespace("srv")) - before
            assert done.returncode == 0, done.stderr
            evidence = json.loads(out.read_text())["evidence"]
    finally:
        srv.kill()
        srv.wait(30)
    assert 0 < evidence.get("counters", {}).get("TcpExtListenOverflows", 0) <= moved, (moved, evidence)
    assert isinstance(evidence.get("counters_pid"), int) and "counters_unread" not in evidence, evidence
    assert evidence.get("counters_landed") == (
        f"found where a connection made to it before the load landed, DNATed to {address}:{port}"
    ), evidence
    said = " ".join(done.stdout.split())
    assert f"DNATed to {address}:{port}" in said and "the server's network namespace, read from /proc/" in said, said


def test_a_dnat_to_a_namespace_not_seen_says_not_read_dnated(cluster: Cluster, twin: str, dnat: Any) -> None:
    """bridge:P DNATed to a listener in the twin, which has no process for the tool to find it by: the connection
    is seen nowhere, this namespace's conntrack says where NAT sent it, and the counters are 'not read: DNATed'."""
    if not Path("/proc/net/nf_conntrack").exists():
        pytest.skip("this kernel keeps no /proc/net/nf_conntrack")
    address = cluster.address("srv")
    listener = _in_netns(twin, lambda: socket.create_server((address, 0)))
    try:
        port = int(listener.getsockname()[1])
        published = dnat(address, port)
        where = locate(cluster.bridge_address, published)
    finally:
        listener.close()
    assert where == Located(False, sent_to=(address, port), why=where.why), where
    assert (where.why or "").startswith(f"DNATed: NAT sent a connection made to find where it lands to {address}:")


# this namespace's server ends, as /proc/net/tcp lists them and as sock_diag gives them (what land() asks of ours)
READERS = pytest.mark.parametrize(
    "server_ends", [lambda client: landing.server_ends("self", client), landing.server_ends_here], ids=["proc", "diag"]
)


@needs_ipv6
@READERS
def test_the_server_end_is_found_through_a_dual_stack_listener(server_ends: Callable[..., Any]) -> None:
    """An IPv4 connection accepted on a dual-stack listener is listed in tcp6, its peer ::ffff:127.0.0.1."""
    with socket.create_server(("::", 0), family=socket.AF_INET6, dualstack_ipv6=True) as listener:
        port = int(listener.getsockname()[1])
        with socket.create_connection(("127.0.0.1", port), 10) as client:
            mine = client.getsockname()[:2]
            assert ("::ffff:127.0.0.1", port) in server_ends(mine)


@READERS
def test_a_closed_connection_s_server_side_from_the_same_port_is_not_taken(server_ends: Callable[..., Any]) -> None:
    """A port is used again for another connection while the last one's server side lingers in TIME_WAIT (here
    it did: another server's socket whose remote end was this connection's local one): not a server side."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname()[:2], 10)
        mine = client.getsockname()[:2]
        accepted, _ = listener.accept()
        with accepted, client:
            assert server_ends(mine) == [listener.getsockname()[:2]]
            accepted.close()  # the server closes first: its side goes through FIN_WAIT to TIME_WAIT once we close
        wait_for(lambda: _state(listener.getsockname()[1], mine[1]), lambda st: st == "06", 30, "its TIME_WAIT")
        assert server_ends(mine) == [], "TIME_WAIT taken for a server side"


def _state(port: int, peer_port: int) -> str | None:
    """The tcp table's state of this namespace's socket on `port` whose remote port is `peer_port`."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(f":{port:04X}") and fields[2].endswith(f":{peer_port:04X}"):
            return fields[3]
    return None


def test_conntrack_says_where_nat_sent_a_connection() -> None:
    line = (
        "ipv4     2 tcp      6 117 SYN_SENT src=10.0.0.1 dst=10.0.0.1 sport=40000 dport=18080 [UNREPLIED] "
        "src=10.0.0.2 dst=10.0.0.1 sport=80 dport=40000 mark=0 zone=0 use=2"
    )
    asked = ("10.0.0.1", 18080)
    assert landing.conntrack_destination(("10.0.0.1", 40000), asked, line) == ("10.0.0.2", 80)
    assert landing.conntrack_destination(("10.0.0.1", 40001), asked, line) is None
    assert landing.conntrack_destination(("10.0.0.3", 40000), asked, line) is None
    assert landing.conntrack_destination(("10.0.0.1", 40000), ("10.0.0.1", 8080), line) is None  # another's


def test_a_lone_socket_from_the_same_port_to_another_server_is_not_where_it_landed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe's server side seen nowhere (as behind a masquerade), and one socket elsewhere whose remote end is the
    probe's local one but whose local end is neither the address asked for nor NAT's: another connection's from the
    same port (a container's), not taken for where this one landed."""
    other = landing.Landing(namespace=1, pids=(1,), server=("10.9.9.9", 5))
    monkeypatch.setattr(landing, "_ends", lambda client, among=None: [other])
    monkeypatch.setattr(landing, "conntrack_destination", lambda client, asked: None)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        landed = landing.land("127.0.0.1", int(listener.getsockname()[1]))
    assert landed.namespace is None and "seen in none" in landed.why, landed


def test_a_ramp_at_a_dnated_target_says_where_it_landed(cluster: Cluster, dnat: Callable[[str, int], int]) -> None:
    """The ramp's file keeps how its counters' namespace was found, and its per-step heading says it."""
    address = cluster.address("srv")
    srv, port = _serve(cluster.namespace("srv"), address)
    try:
        target = f"{cluster.bridge_address}:{dnat(address, port)}"
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "result.json"
            argv = [sys.executable, "-m", "accept_order", "ramp", "--target", target, "--concurrency-steps", "2"]
            argv += ["--step", "300ms", "-w", "1", "--json", str(out)]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            run = json.loads(out.read_text())
    finally:
        srv.kill()
        srv.wait(30)
    landed = f"found where a connection made to it before the load landed, DNATed to {address}:{port}"
    assert run.get("counters_landed") == landed, run
    assert f"read through its processes; {landed}" in " ".join(done.stdout.split()), done.stdout
