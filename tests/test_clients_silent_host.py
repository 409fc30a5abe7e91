"""A client host that falls silent mid-run, its ssh connection still open, is lost after driven.SILENT_S; the run
goes on to its end without it and exits 1 after the result, as for a host whose connection closed.

Silent two ways, on a real cluster (tests/cluster.py: client namespaces c1, c2, each with its own sshd): c2's link
taken down (its network gone: a cable, a switch, a power cut), and c2's remote Python and drivers stopped (SIGSTOP: a
host stalled). Neither closes the ssh connection: ssh sends no keepalive by default, and the coordinator sends
nothing while it follows the hosts, so nothing ever times out. Before driven's silence check, a 5 s run whose host
lost its link at 3 s was still waiting for it 90 s later, when it was interrupted. The run here is 5 s, the fault
about 1 s into it (an event: c2's own TcpActiveOpens counter), so without the check the command never exits and
run.wait's 90 s fail the test.

The other way round, the coordinator gone while the way to a host is down (its machine's power or network, here a
SIGKILL with c2's link down): c2 never sees its channel close, and its load went on to its --duration (120 s here)
unfollowed. The coordinator beats to each host every second, and a host that hears nothing for
load_side.COORDINATOR_SILENT_S (10 s) stops its load and its Python exits; the coordinator's ssh, left without its
coordinator, ends by its keepalives (gateways.SERVER_ALIVE) where it waited for TCP to give up on the dead
connection, a quarter of an hour.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from cluster import Cluster, cluster_fixture
from test_clients_faults import (
    GONE_S,
    LONG,
    RATE,
    TICKED_CONNECTS,
    Run,
    _remote_python,
    active_opens,
    assert_nothing_left,
    load_args,
    local_processes,
    opened,
    remote_processes,
    start,
    under_way,
)
from waiting import ended_within

from accept_order.core.hosts import ClientHosts
from accept_order.loads.hosts.gateways import _spec
from accept_order.loads.hosts.ssh_config_read import unset

cluster = cluster_fixture(clients=2)
SILENT = (
    r"it said nothing for 10 s, after at least (\d+) connections \((\d+) served by its last report\): the host "
    r"stalled or the network to it is gone \(its ssh connection was still open\)"
)


@contextmanager
def link_down(c: Cluster, name: str) -> Iterator[None]:
    """The host's only link down (its network gone), up again when the block ends, for the module's next tests."""
    host = c.hosts[name]
    subprocess.run(["ip", "netns", "exec", host.namespace, "ip", "link", "set", host.inner_link, "down"], check=True)
    try:
        yield
    finally:
        subprocess.run(["ip", "netns", "exec", host.namespace, "ip", "link", "set", host.inner_link, "up"], check=True)


@contextmanager
def stalled(c: Cluster, name: str) -> Iterator[None]:
    """The host's remote Python and its drivers stopped (a host stalled: its sshd still answers), continued when the
    block ends, to find their channel gone and exit."""
    python = _remote_python(c, name)
    processes = [python, *python.children(recursive=True)]
    for process in processes:
        process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for process in processes:
            try:
                process.send_signal(signal.SIGCONT)
            except psutil.NoSuchProcess:
                pass


def _ended(run: Run) -> int:
    try:
        return run.wait()
    except subprocess.TimeoutExpired:
        os.killpg(run.proc.pid, signal.SIGKILL)  # waiting for the silent host for ever: the bug this file is about
        run.proc.wait(30)
        raise


@pytest.mark.parametrize("fault", ["link down", "stalled"])
def test_a_host_silent_mid_run_is_lost_and_the_others_result_kept(cluster: Cluster, tmp_path: Path, fault: str) -> None:
    before = opened(cluster)
    run = start(tmp_path, *load_args(cluster, tmp_path), "--duration", "5s", "--rate", str(RATE))
    under_way(run, cluster, before, TICKED_CONNECTS)
    with link_down(cluster, "c2") if fault == "link down" else stalled(cluster, "c2"):
        code = _ended(run)
        driven = active_opens(cluster, "c2") - before["c2"]
    assert code == 1, run.err.text
    saved, error = run.error_lines()  # the file first, then the one line
    assert saved == f"wrote {run.json_path}", run.err.text
    assert re.fullmatch(
        f"accept-order: error: client host c2 was lost during the run: {SILENT}; the report and "
        f"{re.escape(str(run.json_path))} hold what the other hosts drove",
        error,
    ), error
    c1, c2 = run.document()["hosts"]
    assert c1["lost"] is None and c1["served_total"] > 0
    lost = re.fullmatch(SILENT, c2["lost"] or "")
    assert lost is not None, c2["lost"]
    assert 0 < int(lost.group(2)) <= int(lost.group(1)) <= driven  # what it had done, as far as it had said
    assert c2["served_total"] == 0
    assert run.document()["summary"]["count"] == c1["served_total"]
    assert "Traceback" not in run.err.text
    assert_nothing_left(cluster, str(tmp_path))  # the link up again, or the processes continued: they end


def test_a_host_that_hears_nothing_from_the_coordinator_stops_its_load(cluster: Cluster, tmp_path: Path) -> None:
    before = opened(cluster)
    run = start(tmp_path, *load_args(cluster, tmp_path), *LONG, "--rate", str(RATE))
    under_way(run, cluster, before, TICKED_CONNECTS)
    with link_down(cluster, "c2"):
        run.proc.kill()
        assert run.wait() == -signal.SIGKILL
        # its sshd session stays until the link is up (it has its exit to tell ssh): the host's sshd's, not ours
        ended_within(
            lambda: [p for p in remote_processes(cluster, "c2") if "python" in p],
            10 + GONE_S,
            "c2's load to stop without a word from the coordinator for 10 s, its link down",
        )
        ended_within(
            lambda: [p for p in local_processes(str(tmp_path)) if " c2 " in p],
            20 + GONE_S,
            "the ssh to c2 to end by its keepalives, c2's link down",
        )
    assert_nothing_left(cluster, str(tmp_path))  # the link up: ssh here and the sshd session there see their end


def _as_ssh_reads(config: Path, destination: str) -> dict[str, str]:
    """The keepalive settings ssh itself reads (ssh -G) from the options the tool gives it for the destination."""
    spec = _spec(destination, ClientHosts((destination,), ssh_config=str(config)), 0)
    shown = subprocess.run(["ssh", *spec.ssh.split(" ")[:-2], "-G", destination], capture_output=True, text=True)
    pairs = (line.split(" ", 1) for line in shown.stdout.splitlines())
    return {name: value for name, value in pairs if name.startswith("serveralive")}


def test_the_users_own_keepalive_is_kept(tmp_path: Path) -> None:
    """The tool's keepalive where the user's config has none; theirs (an interval, a count, by Host or Match) where
    it has. An -o ServerAliveCountMax=3 of the tool's overrode a config's ServerAliveCountMax 10 (ssh takes the
    first value it reads, the command line's), and a config's ServerAliveInterval 300 was read as BatchMode's
    default and overridden."""
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host alive\n  HostName 192.0.2.1\n  ServerAliveInterval 60\nHost plain\n  HostName 192.0.2.2\n"
        "Host patient\n  HostName 192.0.2.3\n  ServerAliveCountMax 10\n"
        "Match host 192.0.2.4\n  ServerAliveInterval 30\n"
        "Host five\n  HostName 192.0.2.5\n  ServerAliveInterval 300\n"  # BatchMode's default, here the user's
    )
    options = ["-F", str(config), "-o", "BatchMode=yes"]
    assert unset(options, "plain") == {"connecttimeout", "serveraliveinterval"}
    assert unset(options, "alive") == {"connecttimeout"}  # theirs
    assert _as_ssh_reads(config, "plain") == {"serveraliveinterval": "5", "serveralivecountmax": "3"}
    assert _as_ssh_reads(config, "alive") == {"serveraliveinterval": "60", "serveralivecountmax": "3"}
    assert _as_ssh_reads(config, "patient") == {"serveraliveinterval": "5", "serveralivecountmax": "10"}
    assert _as_ssh_reads(config, "192.0.2.4") == {"serveraliveinterval": "30", "serveralivecountmax": "3"}
    assert _as_ssh_reads(config, "five") == {"serveraliveinterval": "300", "serveralivecountmax": "3"}


def test_a_coordinator_stopped_for_longer_than_the_silence_does_not_blame_its_hosts(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The coordinator suspended (Ctrl-Z, a SIGSTOP, its machine paused) past COORDINATOR_SILENT_S: its hosts, hearing
    no beat, stop their loads and say so, and that is what the run ends on once it is continued. Its own silence
    check, run first as it resumed, read the time it was stopped as its hosts' silence and named every host lost as
    'it said nothing for 10 s ... the host stalled or the network to it is gone', of hosts that had ticked all along
    into a coordinator that was not reading."""
    before = opened(cluster)
    run = start(tmp_path, *load_args(cluster, tmp_path), *LONG, "--rate", str(RATE))
    under_way(run, cluster, before, TICKED_CONNECTS)
    run.proc.send_signal(signal.SIGSTOP)  # the coordinator alone: its ssh clients, in sessions of their own, run on
    try:
        ended_within(  # the hosts' own check: each stops its load and its Python exits
            lambda: [p for name in ("c1", "c2") for p in remote_processes(cluster, name) if "python" in p],
            10 + GONE_S,
            "the hosts to stop their loads without a word from the stopped coordinator",
        )
    finally:
        run.proc.send_signal(signal.SIGCONT)
    assert _ended(run) == 1, run.err.text
    error = run.error_lines()[-1]
    stopped = "it failed: no word from the coordinator for 10 s: it stopped its load"
    assert error == f"accept-order: error: every client host was lost: c1: {stopped}; c2: {stopped}", run.err.text
    assert "said nothing" not in run.err.text and "Traceback" not in run.err.text
    assert_nothing_left(cluster, str(tmp_path))
