"""Review RL of 1262c32/1d02e19: a load from client hosts (--clients) at a --target whose address is this host's own
(the server runs here, the client hosts connect to it) was read as if this host had only coordinated. A real ramp
--clients c1,c2 at a `serve` on this host's bridge address said 'this host, which only coordinated ... none of the
run's connections crossed it', left its table's overflows out ('-') though this host's ListenOverflows +4921 were
the server's own, and its knee lost 'There: the accept queue overflowed ...'; a burst's per-burst line called the
server's counters 'this host's, which only coordinated'; latency's Kernel evidence the same (traffic_elsewhere).

servers/remote.py on_this_host tells the two apart (an interface of this network namespace holds the address); the
steps and bursts that came here keep `through_here` in the file, and their readings are the server's host's."""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import test_cluster_coordinator_readings as readings
from cluster import Cluster, cluster_fixture
from conftest import OutputReader
from test_clients_faults import bridge, own_config

from accept_order.core.hosts import ClientHosts
from accept_order.core.spec import ServerSpec
from accept_order.servers.remote import RemoteServer, on_this_host

cluster = cluster_fixture(clients=1)


def _own_address() -> str:
    """An address an interface of this network namespace holds, loopback aside."""
    for addresses in psutil.net_if_addrs().values():
        for a in addresses:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return str(a.address)
    pytest.skip("no interface here holds an IPv4 address but loopback")


def _nobody_s() -> str:
    held = {a.address for addresses in psutil.net_if_addrs().values() for a in addresses}
    return next(f"198.51.100.{n}" for n in range(1, 255) if f"198.51.100.{n}" not in held)  # TEST-NET-2


def test_an_address_of_this_host_s_is_told_from_one_elsewhere() -> None:
    assert on_this_host(_own_address())
    assert not on_this_host(_nobody_s())
    assert not on_this_host("127.0.0.1")  # each client host's own loopback, not this host's
    assert not on_this_host("nowhere.invalid")


def test_a_target_at_this_host_s_address_keeps_its_counters_as_the_server_s() -> None:
    for host, elsewhere in ((_own_address(), False), (_nobody_s(), True)):
        remote = RemoteServer(ServerSpec(kind="remote", mode="remote", host=host, port=8080, workers=1))
        remote.driven_from_hosts()
        assert remote.own_evidence() == ({"traffic_elsewhere": True} if elsewhere else {}), host


def _here(document: dict[str, Any], key: str) -> dict[str, Any]:
    for run in document.get("runs", [document]):
        for one in run[key]:
            one["through_here"] = True
    return document


def test_a_ramp_that_came_to_this_host_keeps_its_overflows_and_host_cpus(tmp_path: Path) -> None:
    shown = readings._shown(readings._saved(tmp_path, "ramp.json", _here(readings._coordinated_ramp(False), "steps")))
    rows = readings._table_rows(shown)
    assert len(rows) == 2, shown
    for row in rows:  # this host's ListenOverflows and CPUs are the server's host's
        assert row.split()[-5] == "31" and row.split()[-2] == "97%", row
    assert "only coordinated" not in shown
    assert "both host-wide, of this host: the server's (the load came from the client hosts)" in shown


def test_a_burst_that_came_to_this_host_says_its_counters_unlabelled(tmp_path: Path) -> None:
    document = json.loads((readings.DATA / "cluster_burst_stopped.json").read_text())
    document["runs"][0]["cells"][0]["counters"] = {"TcpExtListenOverflows": 5}
    shown = readings._shown(readings._saved(tmp_path, "burst.json", _here(document, "cells")))
    assert "ListenOverflows +5" in shown and "only coordinated" not in shown, shown
    from accept_order.experiments.burst.result import BurstCell

    cell = BurstCell.from_dict(document["runs"][0]["cells"][0])
    assert cell.through_here and BurstCell.from_dict(cell.to_dict()).through_here  # saved as read


@pytest.fixture
def server_here(cluster: Cluster) -> Iterator[str]:
    """`accept-order serve -w 1` in this namespace at its address on the cluster's bridge: HOST:PORT."""
    argv = [sys.executable, "-m", "accept_order", "serve", "-w", "1", "--host", bridge(cluster)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = OutputReader(proc.stdout)  # type: ignore[arg-type]
    OutputReader(proc.stderr)  # type: ignore[arg-type]  # drained: its warning must not fill a pipe
    try:
        yield out.wait_for(r"listening on (\S+:\d+)", 60).group(1)
    finally:
        proc.kill()
        proc.wait(30)


def test_a_real_ramp_from_a_client_host_at_this_host_sees_this_host_s_counters(
    cluster: Cluster, server_here: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accept_order.experiments.ramp import run as ramp_run

    reads = itertools.count()
    real = ramp_run.netstat.read_counters
    monkeypatch.setattr(
        ramp_run.netstat, "read_counters", lambda: {**real(), "TcpExtListenOverflows": 50 * next(reads)}
    )
    host, port = server_here.rsplit(":", 1)
    spec = ServerSpec(kind="remote", mode="remote", host=host, port=int(port), workers=1)
    hosts = ClientHosts(("c1",), ssh_config=own_config(cluster, tmp_path))
    result = ramp_run.run_ramp(spec, ramp_run.RampPlan(concurrencies=(2,), step_s=0.3, client_hosts=hosts))
    (step,) = result.steps
    assert sum(step.served) > 0 and step.hosts and step.through_here, step
    assert "the accept queue overflowed 50 times" in step.seen, step.seen
    assert ramp_run.RampResult.from_dict(result.to_dict()).steps[0].through_here  # the file keeps it


def test_a_failed_observe_on_is_not_said_to_have_brought_its_counts(tmp_path: Path) -> None:
    """--observe-on whose observation failed (said in one line below) brought nothing: the --target note lists
    what is missing as without it, not 'observe on its host ... counted each worker's accepts'."""
    ramp = readings._coordinated_ramp(observed=True)
    for step in ramp["steps"]:
        step["observed_on"] = [{"host": "server", "error": "ssh: connect to host server port 22: Connection refused"}]
    shown = readings._shown(readings._saved(tmp_path, "ramp.json", ramp))
    assert "observe on server, 200/s failed" in shown
    assert "counted each worker's accepts" not in shown and "observe's evidence (--observe-on runs" in shown, shown
    ok = readings._shown(readings._saved(tmp_path, "ok.json", readings._coordinated_ramp(observed=True)))
    assert "counted each worker's accepts" in ok
