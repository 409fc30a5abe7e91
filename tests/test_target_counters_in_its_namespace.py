"""A --target in another network namespace of this machine has its kernel counters read there, not in ours: 'ramp
--target <address in another namespace>' put 188 and 46 in its overflows column, this host's (the client's)
ListenOverflows, and could give an overflow as a knee's reason. Here `accept-order serve --backlog 1` in the cluster's
srv namespace overflows under a burst, a ramp and a latency run at it; the witness is srv's own nstat (ip netns exec
... nstat). A server elsewhere (none of this machine's namespaces) has its counters said not read, never ours."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster import Cluster, cluster_fixture
from waiting import OutputReader

from accept_order.core.spec import ServerSpec
from accept_order.experiments.ramp import report as ramp_report
from accept_order.experiments.ramp.result import RampStep
from accept_order.experiments.ramp.step_verdict import signals
from accept_order.probes.address_netns import Located, locate
from accept_order.servers.remote import RemoteServer

cluster = cluster_fixture(clients=0)


def _overflows(cluster: Cluster) -> int:
    argv = ["ip", "netns", "exec", cluster.namespace("srv"), "nstat", "-asz", "TcpExtListenOverflows"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if line.startswith("TcpExtListenOverflows"))


def _tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "accept_order", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def server(cluster: Cluster) -> Iterator[tuple[str, int]]:
    """`accept-order serve -w 1 --backlog 1` in srv's namespace: its (address, port)."""
    host = cluster.address("srv")
    serve = [sys.executable, "-m", "accept_order", "serve", "-w", "1", "--backlog", "1", "--host", host]
    proc = cluster.run_in("srv", serve, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield host, int(OutputReader(proc.stdout).wait_for(r"listening on \S+:(\d+)", 60).group(1))
    finally:
        proc.kill()
        proc.wait(30)


def test_the_target_s_namespace_is_found(server: tuple[str, int], cluster: Cluster) -> None:
    where = locate(*server)
    assert not where.ours and where.pids, where
    assert os.stat(f"/proc/{where.pids[0]}/ns/net").st_ino == cluster.netns_inode("srv")
    assert locate(server[0], server[1] + 1) == Located(False)  # nothing listens there: not said to be srv's


# The witness is srv's count over the whole command, the tool's over the load alone: srv's half-open connections go
# on counting after it (a client's ACK to a SYN-ACK sent again, its FIN as it closes: 230 against a step's 204), so
# the tool's is at most srv's; ours, the client's namespace, counts none of them.


def _measured(cluster: Cluster, *args: str) -> tuple[dict[str, Any], int]:
    """The result file of `accept-order ARGS --json F`, and how many overflows srv's own nstat counted meanwhile."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        before = _overflows(cluster)
        done = _tool(*args, "--json", str(out))
        after = _overflows(cluster)
        assert done.returncode == 0, done.stderr
        assert after > before, "the load overflowed srv's backlog of 1"
        document = json.loads(out.read_text())
        return document.get("runs", [document])[0], after - before  # burst keeps its runs in a list


def test_a_burst_at_a_target_in_another_namespace_reads_its_overflows(
    server: tuple[str, int], cluster: Cluster
) -> None:
    run, witness = _measured(cluster, "burst", "--target", f"{server[0]}:{server[1]}", "--clients", "64", "-w", "1")
    (cell,) = run["cells"]
    assert 0 < cell.get("counters", {}).get("TcpExtListenOverflows", 0) <= witness, (witness, cell.get("counters"))
    assert not cell.get("server_unread"), cell


def test_a_ramp_at_a_target_in_another_namespace_reads_its_overflows(server: tuple[str, int], cluster: Cluster) -> None:
    target = f"{server[0]}:{server[1]}"
    run, witness = _measured(
        cluster, "ramp", "--target", target, "--concurrency-steps", "64", "--step", "1s", "-w", "1"
    )
    (step,) = run["steps"]
    assert 0 < step.get("counters", {}).get("TcpExtListenOverflows", 0) <= witness, (witness, step.get("counters"))
    assert not step.get("server_unread") and step.get("counters_netns"), step
    # whose: the counters srv's namespace's, not 'both host-wide' with the sockets (ours, the client's)
    said = _whose_said(RampStep.from_dict(step))
    assert "the kernel counters the server's network namespace's" in said and "host-wide" not in said, said


def _whose_said(step: RampStep) -> str:
    from accept_order.experiments.ramp.result import RampResult

    spec = ServerSpec(kind="remote", mode="remote", host="192.0.2.77", port=9, workers=1)
    return ramp_report._whose(RampResult(server=spec, plan={}, steps=(step,), environment=None))


def test_a_latency_run_at_a_target_in_another_namespace_reads_its_overflows(
    server: tuple[str, int], cluster: Cluster
) -> None:
    target = f"{server[0]}:{server[1]}"
    run, witness = _measured(cluster, "latency", "--target", target, "-n", "400", "-c", "64", "-w", "1")
    evidence = run["evidence"]
    assert 0 < evidence.get("counters", {}).get("TcpExtListenOverflows", 0) <= witness, (witness, evidence)
    assert isinstance(evidence.get("counters_pid"), int) and "counters_unread" not in evidence, evidence


def test_a_server_elsewhere_has_no_counters_said_as_its() -> None:
    remote = RemoteServer(ServerSpec(kind="remote", mode="remote", host="192.0.2.77", port=9, workers=1))
    remote._located = Located(False)  # none of this machine's namespaces
    assert remote.counters_reader() is None
    assert "the server is elsewhere" in (remote.unread_counters() or "")
    remote.driven_from_hosts()  # client hosts: a coordinator's counters, labelled as such elsewhere
    assert remote.unread_counters() is None


def test_a_ramp_step_whose_server_was_elsewhere_gives_no_overflow_as_its_reason() -> None:
    step = RampStep(
        kind="rate",
        offered=100.0,
        wall_s=1.0,
        served=(100,),
        errors={},
        p50_us=1,
        p99_us=1,
        p999_us=1,
        max_us=1,
        counters={},
        sockets={},
        queues=(),
        worker_cpu=(),
        driver_cpu=0.1,
        machine_cpu=None,
        client_cpu_us=None,
        server_unread=True,
    )
    assert ramp_report.overflows(step, elsewhere=False) is None  # '-', not this host's
    assert not [s for s in signals(step, 1, 2) if "overflow" in s]
    assert RampStep.from_dict(step.to_dict()).server_unread  # the file keeps it
    observed = dataclasses.replace(step, observed_on=({"host": "srv", "counters": {"TcpExtListenOverflows": 7}},))
    assert observed.server_unread and ramp_report.overflows(observed, elsewhere=False) == 7  # --observe-on's
    assert any("overflowed 7 times" in s for s in signals(observed, 1, 2))


def test_a_latency_run_at_a_server_elsewhere_says_its_counters_unread(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """srv's server taken for one on another machine (its namespace not found): the run's evidence keeps none of
    this host's counters as the server's, and the report says why."""
    from accept_order.core.spec import ConcurrentLoad
    from accept_order.experiments.session import run_latency
    from accept_order.render.evidence import counters_text
    from accept_order.servers import remote

    host = cluster.address("srv")
    serve = [sys.executable, "-m", "accept_order", "serve", "-w", "1", "--host", host]
    proc = cluster.run_in("srv", serve, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        port = int(OutputReader(proc.stdout).wait_for(r"listening on \S+:(\d+)", 60).group(1))
        monkeypatch.setattr(remote.RemoteServer, "located", property(lambda self: Located(False)))
        spec = ServerSpec(kind="remote", mode="remote", host=host, port=port, workers=1)
        result = run_latency(spec, ConcurrentLoad(connections=50, concurrency=4))
    finally:
        proc.kill()
        proc.wait(30)
    evidence = result.evidence
    assert result.ok and not evidence["counters"] and not evidence["counters_available"], evidence
    said = counters_text(evidence).plain
    assert "not read in the server's network namespace" in said and "the server is elsewhere" in said, said


def test_a_ramp_at_a_server_elsewhere_leaves_its_overflows_out(
    server: tuple[str, int], cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """srv's overflowing server taken for one on another machine: its steps keep none of this host's counters, the
    table's overflows read '-' and the report says whose the sockets are and that the counters were not read."""
    from rich.console import Console

    from accept_order.experiments.ramp import run as ramp_run
    from accept_order.servers import remote

    monkeypatch.setattr(remote.RemoteServer, "located", property(lambda self: Located(False)))
    spec = ServerSpec(kind="remote", mode="remote", host=server[0], port=server[1], workers=1)
    result = ramp_run.run_ramp(spec, ramp_run.RampPlan(concurrencies=(32,), step_s=0.5))
    (step,) = result.steps
    assert sum(step.served) > 0 and step.server_unread and not step.counters, step
    assert ramp_report.overflows(step, ramp_report.coordinated(result)) is None
    console = Console(width=200, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(ramp_report.ramp_report(result))
    shown = console.export_text()
    assert "the kernel counters not read in the server's network namespace (the server elsewhere" in shown, shown
    assert "counters: not read in the server's network namespace" in shown and "no drops" not in shown, shown
    assert "ListenOverflows" not in shown and "overflowed" not in shown, shown


def test_a_ramp_whose_server_namespace_emptied_keeps_its_steps(
    server: tuple[str, int], cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The namespace's counters are read through its processes, found once: all gone (a server killed in a namespace
    of its own: 'ip netns exec' with nothing else there) made the step's read raise ProcessLookupError after the
    load, a traceback, and the steps already measured lost with the file unwritten (ramp --concurrency-steps
    8,16,32, the server SIGKILLed in the 2nd). Here srv's namespace is read through a process of it that has ended;
    the steps are kept, their counters said not read in the server's namespace, none taken from ours."""
    from accept_order.experiments.ramp import run as ramp_run
    from accept_order.servers import remote

    where = locate(*server)
    ended = cluster.run_in("srv", [sys.executable, "-c", "pass"])
    ended.wait(60)
    gone = Located(False, where.namespace, (ended.pid,))
    monkeypatch.setattr(remote.RemoteServer, "located", property(lambda self: gone))
    spec = ServerSpec(kind="remote", mode="remote", host=server[0], port=server[1], workers=1)
    result = ramp_run.run_ramp(spec, ramp_run.RampPlan(concurrencies=(4, 8), step_s=0.3))
    assert len(result.steps) == 2 and all(sum(s.served) > 0 for s in result.steps), result.steps
    assert all(s.server_unread and not s.counters for s in result.steps), result.steps


def test_an_address_two_namespaces_hold_is_read_where_the_route_reaches(server: tuple[str, int]) -> None:
    """srv's address and port held in a second namespace too (two containers on separate bridges, each 10.0.0.2),
    on its loopback, off the route: a connection made to it lands in srv's (probes/landing.py), which is read; the
    holders were once only described, nothing read (tests/test_target_where_connections_land.py has the route
    reaching the later one, and neither)."""
    twin = f"rvtwin{os.getpid()}"
    listen = (
        f"import socket,sys; s=socket.create_server(({server[0]!r},{server[1]})); print('up',flush=True); "
        "sys.stdin.read()"
    )
    srv = locate(server[0], server[1], lambda host, port: pytest.fail("one holder: no connection is made"))
    subprocess.run(["ip", "netns", "add", twin], check=True, timeout=30)
    proc = None
    try:
        for argv in (["addr", "add", f"{server[0]}/32", "dev", "lo"], ["link", "set", "lo", "up"]):
            subprocess.run(["ip", "-n", twin, *argv], check=True, timeout=30)
        argv = ["ip", "netns", "exec", twin, sys.executable, "-c", listen]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        OutputReader(proc.stdout).wait_for(r"up", 60)
        where = locate(*server)
        assert where == dataclasses.replace(srv, holders=2, landed=True), (where, srv)
        remote = RemoteServer(ServerSpec(kind="remote", mode="remote", host=server[0], port=server[1], workers=1))
        assert remote.unread_counters() is None and remote.counters_reader() is not None
    finally:
        if proc is not None:
            proc.kill()
            proc.wait(30)
        subprocess.run(["ip", "netns", "delete", twin], timeout=30)


def test_a_burst_whose_server_namespace_emptied_keeps_its_cells(
    server: tuple[str, int], cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the ramp's case: srv's namespace read through a process of it that has ended; the burst's cells are kept,
    their counters said not read, none taken from ours."""
    from accept_order.experiments.burst.run import BurstPlan, run_bursts
    from accept_order.servers import remote

    where = locate(*server)
    ended = cluster.run_in("srv", [sys.executable, "-c", "pass"])
    ended.wait(60)
    gone = Located(False, where.namespace, (ended.pid,))
    monkeypatch.setattr(remote.RemoteServer, "located", property(lambda self: gone))
    spec = ServerSpec(kind="remote", mode="remote", host=server[0], port=server[1], workers=1)
    run = run_bursts(spec, BurstPlan(clients=(4, 8), driver_procs=1))
    assert len(run.cells) == 2 and all(sum(c.served) > 0 for c in run.cells), run.cells
    assert all(c.server_unread and not c.counters for c in run.cells), run.cells
