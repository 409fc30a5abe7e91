"""--clients on the load commands: what is refused before anything runs (one line, exit 2), a whole run through the
CLI with execnet "popen" gateways standing in for ssh, and one over a real cluster of network namespaces with
sshd (tests/cluster.py) where this machine can make one."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import execnet
import psutil
import pytest
from conftest import KEPT_BY_FIXTURES, assert_one_error_line, run_cli, wait_for

from accept_order.loads.hosts import gateways


def own_address() -> str | None:
    """An IPv4 address of this host other than loopback, that the workers can listen on (None: none here); not
    on a test cluster's bridge (tests/cluster.py: `aoc...`), which another test may remove meanwhile."""
    for name, addresses in psutil.net_if_addrs().items():
        if name.startswith("aoc"):
            continue
        for a in addresses:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return str(a.address)
    return None


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["latency", "--clients", "c1,c2", "-n", "10"], ("listen on 127.0.0.1", "--host ADDRESS")),
        (["sweep", "--clients", "c1", "--host", "0.0.0.0", "-n", "10"], ("0.0.0.0", "--host ADDRESS")),
        (["ramp", "--clients", "c1", "--rates", "10"], ("127.0.0.1", "--host ADDRESS")),
        (["burst", "--client-hosts", "c1", "--clients", "10"], ("127.0.0.1", "--host ADDRESS")),
        (["latency", "--target", "127.0.0.1:80", "--clients", "c1"], ("--target 127.0.0.1", "as the client hosts")),
        (["latency", "--clients", "c1", "--ssh-config", "/nonexistent/cfg"], ("--ssh-config", "does not exist")),
        (["latency", "--clients", "c1", "--ssh-config", "/"], ("--ssh-config", "is not a file")),
        (["latency", "--ssh-config", "/etc/hostname", "-n", "10"], ("--ssh-config goes with --clients",)),
        (["latency", "--client-python", "/usr/bin/python3", "-n", "10"], ("--client-python goes with --clients",)),
        (["latency", "--clients", " , ", "-n", "10"], ("names no host",)),
        (["latency", "--clients", "c1,c1", "--host", "192.0.2.1"], ("names a host twice",)),
        (["latency", "--clients", "-oProxyCommand=x", "--host", "192.0.2.1"], ("not an ssh destination",)),
        (["burst", "--clients", "c1,c2"], ("whole numbers", "--client-hosts")),
        # burst's --clients counts connections: its lines name the hosts' option as it is spelt there
        (["burst", "--clients", "10", "--ssh-config", "/etc/hostname"], ("--ssh-config goes with --client-hosts",)),
        (["burst", "--clients", "10", "--client-hosts", "c1,c1", "--host", "192.0.2.1"], ("--client-hosts names",)),
        (["burst", "--clients", "10", "--client-hosts", "-x", "--host", "192.0.2.1"], ("--client-hosts: '-x'",)),
        (["burst", "--clients", "10", "--client-hosts", "c1"], ("--client-hosts: the workers listen on 127.0.0.1",)),
        # a count where hosts go (burst's --clients counts): said so, not taken for a host named 1000
        (["latency", "--clients", "1000", "-n", "10"], ("'1000' is a number, not hosts", "-c", "burst's --clients")),
        (["ramp", "--clients", "4,8", "--rates", "10"], ("'4,8' is numbers, not hosts",)),
        (["burst", "--client-hosts", "100"], ("'100' is a number, not hosts",)),
        (["reload", "--clients", "c1"], ("has no --clients", "from this host only", "--client-hosts")),
        (["compare", "--clients", "c1"], ("has no --clients", "from this host only", "--client-hosts")),
    ],
)
def test_refused_before_anything_runs(args: list[str], fragments: tuple[str, ...]) -> None:
    assert_one_error_line(run_cli(args), 2, *fragments)


def test_driver_procs_are_said_per_host() -> None:
    for command in ("latency", "sweep", "burst", "ramp"):
        said = " ".join(run_cli([command, "--help"]).stdout.split())  # as one line: --help wraps at 80
        assert "(per client host with --clients)" in said, command
        assert "--client-hosts" in said and "--ssh-config" in said and "--client-python" in said, command
    burst = " ".join(run_cli(["burst", "--help"]).stdout.split())
    assert "With --clients" not in burst and "as --clients" not in burst  # its --clients are connection counts


@pytest.fixture
def popen_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    def spec(destination: str, hosts: Any, index: int) -> Any:
        return execnet.XSpec(f"popen//id=host{index}//python={sys.executable}")

    monkeypatch.setattr(gateways, "_spec", spec)


def _hosts_of(path: Path) -> list[dict[str, Any]]:
    document = json.loads(path.read_text())
    assert document["load"]["clients"]["destinations"] == ["c1", "c2"]
    return list(document["hosts"])


def _check(path: Path, connections: int) -> None:
    document = json.loads(path.read_text())
    hosts = _hosts_of(path)
    assert [h["destination"] for h in hosts] == ["c1", "c2"]
    assert sum(h["served_total"] + sum(h["failed"].values()) for h in hosts) == connections
    assert document["summary"]["count"] + sum(document["errors"].values()) == connections
    per_worker = [sum(h["served"][w] for h in hosts) for w in range(len(document["served"]))]
    assert per_worker == document["served"]


def test_latency_from_two_hosts_through_the_cli(popen_hosts: None, tmp_path: Path) -> None:
    address = own_address()
    if address is None:
        pytest.skip("no address but loopback here: the client hosts must reach the workers on another")
    path = tmp_path / "latency.json"
    args = ["latency", "--clients", "c1,c2", "--host", address, "-n", "400", "-c", "4", "-w", "2", "--json", str(path)]
    result = run_cli(args)
    assert result.exit_code == 0, result.output
    _check(path, 400)
    assert "per client host" in result.stdout and "on each of 2 client hosts (c1, c2)" in result.stdout
    # the workers listen where others reach them on purpose: no warning that they do
    assert "warning" not in result.stderr, result.stderr
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0 and shown.stdout == result.stdout  # show prints what the run printed
    pytest.importorskip("matplotlib")
    assert run_cli(["plot", str(path), "-o", str(tmp_path / "latency.png")]).exit_code == 0


def test_latency_modes_over_client_hosts(popen_hosts: None, tmp_path: Path) -> None:
    """latency --modes is one latency run per mode, each over the hosts: it simply works, a table per mode."""
    address = own_address()
    if address is None:
        pytest.skip("no address but loopback here")
    path = tmp_path / "compare.json"
    args = ["latency", "--modes", "epoll,reuseport", "--clients", "c1,c2", "--host", address, "-n", "200", "-c", "4"]
    result = run_cli([*args, "-w", "2", "--json", str(path)])
    assert result.exit_code == 0, result.output
    runs = json.loads(path.read_text())["runs"]
    assert [len(r["hosts"]) for r in runs] == [2, 2]
    table = result.stdout.split("per client host", 1)[1]
    # the table's rows, not a note under it that names a host second ("Straggler: c2 ...", on a busy machine)
    rows = [line.split()[:2] for line in table.splitlines() if line.split()[:1] in (["epoll"], ["reuseport"])]
    assert [row for row in rows if row[1:] in (["c1"], ["c2"])] == [
        ["epoll", "c1"],
        ["epoll", "c2"],
        ["reuseport", "c1"],
        ["reuseport", "c2"],
    ]


# --- over a real cluster: network namespaces on a bridge, an sshd in each (tests/cluster.py) -------------------


try:
    from cluster import cluster_fixture  # the cluster of tests/cluster.py, where it is there
except ImportError:
    cluster_fixture = None


if cluster_fixture is not None:
    cluster = cluster_fixture(clients=2, server=False)
else:

    @pytest.fixture
    def cluster() -> Iterator[Any]:
        pytest.skip("no tests/cluster.py here")
        yield


def test_latency_over_a_cluster_of_namespaces(cluster: Any, tmp_path: Path) -> None:
    """The command as a user types it: the workers here, on the bridge's address; the load from c1 and c2 over
    ssh with the cluster's own config; nothing left running in any namespace afterwards."""
    assert cluster.subnet is not None
    bridge = str(next(cluster.subnet.hosts()))  # this host's address on the bridge: the clients reach it
    path = tmp_path / "latency.json"
    args = ["latency", "--clients", "c1,c2", "--ssh-config", str(cluster.ssh_config), "--host", bridge]
    done = subprocess.run(
        [sys.executable, "-m", "accept_order", *args, "-n", "600", "-c", "6", "-w", "2", "--json", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    _check(path, 600)
    assert "per client host" in done.stdout
    # each host's sshd stays (the cluster's own, told by its pid: a described command line is cut at 100 characters,
    # under pytest-xdist before its "[listener]"); its ssh sessions, and the drivers in them, end with the run
    sshds = tuple(f"process pid {pid} (" for pid in KEPT_BY_FIXTURES)
    wait_for(
        lambda: [p for p in cluster.leftovers() if p.startswith("process ") and not p.startswith(sshds)],
        lambda left: left == [],
        30,
        "the client hosts' sessions and drivers to end",
    )
