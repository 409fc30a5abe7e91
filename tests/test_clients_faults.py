"""--clients when something goes wrong (issue 29 §1 "Faults", §2), through the command line on a real cluster: client
namespaces c1, c2 and a server namespace srv, each with its own sshd (tests/cluster.py), the coordinator here.

Each fault ends the same way: the command says one line (or keeps the partial result), and nothing it started is left
running anywhere: no ssh client or worker on this host (found by the test's own directory in their command lines,
since an ssh in a session of its own outlives its parent as an orphan), no remote Python or driver in any namespace.
A run is "under way" once each client host's namespace has opened a few TCP connections since the run started (its
own TcpActiveOpens counter): an event, not a delay. (Not the server's sockets: this host's namespace, shared with every
other test, can hold so many TIME_WAITs that a load's closed connections are not kept there.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from cluster import Cluster, cluster_fixture
from cluster_network import netns_inode, pids_in
from conftest import OutputReader, child_processes, wait_for

from accept_order.core.version import VERSION

cluster = cluster_fixture(clients=2)
needs_bpftrace = pytest.mark.skipif(shutil.which("bpftrace") is None, reason="observe's own count needs bpftrace")

UNDER_WAY_CONNECTS = 20  # each host's drivers connected this often: more than -c, so some were served
# Enough for a host's progress (a tick every 0.1 s) to have reached the coordinator: ~1 s of a host's share of RATE
TICKED_CONNECTS = 200
UNDER_WAY_S = 60.0  # for a run to reach both hosts and have both drive (ssh, the bootstrap, drivers) on a busy machine
GONE_S = 20.0  # "within a few seconds", on a busy machine: far below the runs' 120 s, so a load left running fails
EXIT_S = 90.0
CHANNEL_CLOSED_S = 4.0  # below the 5 s after which execnet itself interrupts a task that outlives its channel
# The runs that go on after their fault until their --duration: an open loop at this many connections a second in
# all, not a closed loop that takes every CPU (the hosts' drivers, the workers) for the rest of the run; a host
# opens TICKED_CONNECTS within ~1 s of driving. The load's CPU goes with the rate: what the tests assert (a host's
# count as far as it had said, the other host's result, observe's failure line) needs a load under way only
RATE = 400
LONG = ["--duration", "120s"]  # a load that outlasts every wait here: only the fault under test can end it early
# observe's count on the server's host: each worker's accepts are compared exactly with its replies' and serve's own
# tally, so a thousand tell a miscount as well as the 3,000 before, for a third of the load's CPU
OBSERVED = 1000
LISTENING_WARNING = "accept-order: warning: listening on "  # --clients needs --host ADDRESS, which warns
# the heartbeat a run off a terminal prints every 10 s ('accept-order: 3,100 connections, 10 s elapsed'; 'run 2 of
# 4, ...' of several): progress, not an error line. On a busy machine a run here can pass 10 s (the client hosts'
# ssh, a host's 15 s connect timeout), and two fresh-clone CI runs read one beside the error (2026-11-28)
HEARTBEAT = re.compile(r"accept-order: (?!error: |warning: ).*\b[\d.]+ s elapsed(, about .* left)?")


# --- what is running where ----------------------------------------------------------------------------------------


def remote_processes(c: Cluster, name: str, spared: frozenset[int] = frozenset()) -> list[str]:
    """The processes in the host's namespace besides its sshd listener (the cluster's own) and `spared`."""
    listener = int((c.directory / f"sshd-{name}.pid").read_text())
    inode = netns_inode(c.namespace(name))
    assert inode is not None, f"{c.namespace(name)} is gone"
    found = []
    for pid in pids_in({inode}):
        if pid != listener and pid not in spared:
            try:
                found.append(f"{name}: pid {pid} {Path(f'/proc/{pid}/cmdline').read_bytes()[:120]!r}")
            except OSError:
                continue  # it ended meanwhile
    return found


def local_processes(marker: str) -> list[str]:
    """This host's processes (zombies aside) whose command line holds `marker` (the test's directory): the
    coordinator, its workers and drivers, and each ssh (`ssh -F <the test's config>`), orphaned or not. Read from
    /proc/PID/cmdline alone, which a zombie has emptied (it has no memory left): a probe polled until the run's
    processes are gone, where psutil's process_iter took 13 ms of CPU a look (a few hundred processes, load 12)."""
    found = []
    own = str(os.getpid())
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and entry.name != own:
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue  # it ended meanwhile
            if marker in cmdline:
                found.append(f"pid {entry.name} {cmdline[:120]}")
    return found


def leftovers(c: Cluster, marker: str, spared: frozenset[int]) -> list[str]:
    """local_processes and every host's remote_processes, from one walk of /proc for all the namespaces (a walk a
    namespace tripled the probe's CPU, polled until the run's processes are gone)."""
    listeners = {int((c.directory / f"sshd-{name}.pid").read_text()) for name in c.names}
    inodes = {name: netns_inode(c.namespace(name)) for name in c.names}
    hosts = {inode: name for name, inode in inodes.items() if inode is not None}
    assert len(hosts) == len(inodes), f"a namespace of the cluster is gone: {inodes}"
    found = local_processes(marker)
    for pid in pids_in(set(hosts)):
        if pid in listeners or pid in spared:
            continue
        try:
            st = os.stat(f"/proc/{pid}/ns/net")
            found.append(
                f"{hosts[st.st_dev, st.st_ino]}: pid {pid} {Path(f'/proc/{pid}/cmdline').read_bytes()[:120]!r}"
            )
        except (OSError, KeyError):
            continue  # it ended meanwhile (its pid now another's)
    return found


def assert_nothing_left(c: Cluster, marker: str, spared: frozenset[int] = frozenset()) -> None:
    """Nothing of the run on this host (its processes carry `marker`) or in any namespace (`spared` aside)."""
    wait_for(lambda: leftovers(c, marker, spared), lambda left: left == [], GONE_S, "every process of the run to end")


def tree(process: subprocess.Popen[Any]) -> frozenset[int]:
    """A process of the test's own (a server) and its children."""
    return frozenset([process.pid, *(p.pid for p in psutil.Process(process.pid).children(recursive=True))])


def active_opens(c: Cluster, name: str) -> int:
    """Connections the host's network namespace has opened (TCP ActiveOpens: its drivers' connects; the ssh
    sessions into it are passive). A namespace's counter counts that namespace's sockets only."""
    listener = int((c.directory / f"sshd-{name}.pid").read_text())
    header, values = [line.split() for line in Path(f"/proc/{listener}/net/snmp").read_text().splitlines()
                      if line.startswith("Tcp:")]  # fmt: skip
    return int(values[header.index("ActiveOpens")])


# --- the command --------------------------------------------------------------------------------------------------


@dataclass
class Run:
    """The command started in a session of its own, as a terminal starts a job in a process group of its own."""

    proc: subprocess.Popen[str]
    out: OutputReader
    err: OutputReader
    json_path: Path

    def wait(self, timeout: float = EXIT_S) -> int:
        code = self.proc.wait(timeout)
        self.out.finish()
        self.err.finish()
        return code

    def error_lines(self) -> list[str]:
        return [
            line
            for line in self.err.text.splitlines()
            if not line.startswith(LISTENING_WARNING) and not HEARTBEAT.fullmatch(line)
        ]

    def document(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.json_path.read_text())
        return data


def start(tmp_path: Path, *args: str) -> Run:
    json_path = tmp_path / "run.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "accept_order", *args, "--json", str(json_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "COLUMNS": "200"},  # the report's lines unwrapped
    )
    return Run(proc, OutputReader(proc.stdout), OutputReader(proc.stderr), json_path)  # type: ignore[arg-type]


def own_config(c: Cluster, tmp_path: Path, extra: str = "") -> str:
    """The cluster's ssh config as a file of the test's own: its path marks the test's ssh processes."""
    path = tmp_path / "ssh_config"
    path.write_text(c.ssh_config.read_text() + extra)
    return str(path)


def bridge(c: Cluster) -> str:
    """This host's address on the cluster's network: the client hosts reach the workers there."""
    assert c.subnet is not None
    return str(next(c.subnet.hosts()))


def load_args(c: Cluster, tmp_path: Path, clients: str = "c1,c2", extra_config: str = "") -> list[str]:
    config = own_config(c, tmp_path, extra_config)
    return ["latency", "--clients", clients, "--ssh-config", config, "--host", bridge(c), "-w", "2", "-c", "4"]


def opened(c: Cluster) -> dict[str, int]:
    return {name: active_opens(c, name) for name in ("c1", "c2")}


def under_way(run: Run, c: Cluster, before: dict[str, int], connects: int = UNDER_WAY_CONNECTS) -> None:
    """Wait until each client host has opened `connects` connections since `before` (its drivers are driving)."""
    wait_for(
        lambda: ({name: count - before[name] for name, count in opened(c).items()}, run.proc.poll()),
        lambda seen: min(seen[0].values()) >= connects or seen[1] is not None,
        UNDER_WAY_S,
        f"both client hosts to open {connects} connections",
    )
    assert run.proc.poll() is None, f"the run ended early: {run.err.text}"


@pytest.fixture
def server(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    """`accept-order serve -w 3` in srv: (its process, its HOST:PORT, the file its tally goes to on SIGINT). Its
    file is outside the test's directory: it is not the run's, and stays up after it."""
    tally = tmp_path_factory.mktemp("serve") / "serve.json"
    argv = [sys.executable, "-m", "accept_order", "serve", "-w", "3", "--host", cluster.address("srv")]
    proc = cluster.run_in(
        "srv", [*argv, "--json", str(tally)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out = OutputReader(proc.stdout)  # type: ignore[arg-type]
    OutputReader(proc.stderr)  # type: ignore[arg-type]  # drained: its warning must not fill a pipe
    address = out.wait_for(r"listening on (\S+:\d+)", 60).group(1)
    try:
        yield proc, address, tally
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


# --- a host that cannot be reached --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hostname", "why"),
    [("{subnet}.99", "No route to host|timed out"), ("nowhere.invalid", "Could not resolve hostname")],
    ids=["nobody-at-the-address", "unresolvable-name"],
)
def test_an_unreachable_host_is_one_line_naming_it_and_leaves_nothing(
    cluster: Cluster, tmp_path: Path, hostname: str, why: str
) -> None:
    entry = cluster.ssh_config.read_text().split("\n\n")[0]  # c1's entry, under another name and address
    address = cluster.address("c1")
    ghost = entry.replace("Host c1", "Host ghost").replace(
        f"HostName {address}", f"HostName {hostname.format(subnet=address.rsplit('.', 1)[0])}"
    )
    run = start(tmp_path, *load_args(cluster, tmp_path, "c1,ghost", "\n" + ghost), *LONG)
    assert run.wait() == 1
    [line] = run.error_lines()
    assert line.startswith("accept-order: error: client host ghost: could not be reached over ssh"), line
    assert re.search(why, line), line
    assert_nothing_left(cluster, str(tmp_path))  # c1 was reached: its Python ends too


def test_ctrl_c_while_a_host_hangs_in_its_handshake_ends_at_once(cluster: Cluster, tmp_path: Path) -> None:
    """A host whose ssh never gets an answer (here a ProxyCommand that never speaks; out there a firewall that drops
    packets, for ssh's ConnectTimeout or much longer): Ctrl-C ends the command without waiting for it, and the ssh,
    its ProxyCommand and the host already reached all end."""
    entry = cluster.ssh_config.read_text().split("\n\n")[0]
    proxy = f'\n  ProxyCommand {sys.executable} -c "import time; time.sleep(1000)" {tmp_path}\n'  # ssh adds exec
    stuck = entry.replace("Host c1", "Host stuck").replace("ConnectTimeout 5", "ConnectTimeout 600").rstrip() + proxy
    run = start(tmp_path, *load_args(cluster, tmp_path, "c1,stuck", "\n" + stuck), *LONG)
    wait_for(
        lambda: [p for p in local_processes(str(tmp_path)) if "time.sleep" in p],
        bool,
        UNDER_WAY_S,
        "the stuck host's ProxyCommand",
    )
    os.killpg(run.proc.pid, signal.SIGINT)
    assert run.wait(GONE_S) == 130, run.err.text
    assert run.error_lines()[-1].startswith("accept-order: error: interrupted"), run.err.text
    assert_nothing_left(cluster, str(tmp_path))


# --- a host that dies mid-run -------------------------------------------------------------------------------------


def _remote_python(c: Cluster, name: str) -> psutil.Process:
    """The interpreter that ssh started in the host (the drivers are its children). Found through the kernel's
    children lists (conftest.child_processes): psutil's children() reads every process's parent on the machine, and
    tests poll this (test_clients_kept_faults' steps: ~1 s of the pytest process's CPU a test)."""
    listener = int((c.directory / f"sshd-{name}.pid").read_text())
    for session in child_processes(listener):
        for child in child_processes(session.pid):
            try:
                if "python" in child.name():
                    return child
            except psutil.NoSuchProcess:
                continue  # it ended meanwhile
    raise AssertionError(f"no remote Python in {name}: {remote_processes(c, name)}")


@pytest.mark.parametrize("victim", ["python", "sshd-session"])
def test_a_host_that_dies_mid_run_is_named_and_the_other_hosts_result_kept(
    cluster: Cluster, tmp_path: Path, victim: str
) -> None:
    """Exit 1 after the report and the file, with one line naming the lost host: the run measured what the hosts
    that stayed drove, and the report and the file name the lost host with what it had done (its histogram went
    with it), but not the load asked for (it exited 0: tests/test_clients_lost_exit.py has sweep, burst, ramp)."""
    before = opened(cluster)
    # c2 is killed about 1 s into the load (TICKED_CONNECTS at half of RATE): c1 drives on alone to the end, its
    # result what is asserted; 5 s leaves 4 for a busy machine (8 s drove 1,200 connections more, for nothing)
    run = start(tmp_path, *load_args(cluster, tmp_path), "--duration", "5s", "--rate", str(RATE))
    under_way(run, cluster, before, TICKED_CONNECTS)
    python = _remote_python(cluster, "c2")
    killed = python if victim == "python" else python.parent()  # the session's sshd: the connection drops
    assert killed is not None
    killed.kill()
    assert run.wait() == 1, run.err.text
    driven = active_opens(cluster, "c2") - before["c2"]
    saved, error = run.error_lines()  # the file first, then the one line
    assert saved == f"wrote {run.json_path}", run.err.text
    assert error.startswith("accept-order: error: client host c2 was lost during the run: its connection closed")
    assert error.endswith(f"; the report and {run.json_path} hold what the other hosts drove"), error
    document = run.document()
    c1, c2 = document["hosts"]
    assert (c1["destination"], c2["destination"]) == ("c1", "c2")
    assert c1["lost"] is None and c1["served_total"] > 0
    said = r"its connection closed after at least (\d+) connections \((\d+) served by its last report\).*"
    lost = re.fullmatch(said, c2["lost"] or "")
    assert lost is not None, c2["lost"]
    assert 0 < int(lost.group(2)) <= int(lost.group(1)) <= driven  # what it had done, as far as it had said
    assert c2["served_total"] == 0 and c2["failed"] == {}
    assert document["summary"]["count"] == c1["served_total"] and document["served"] == c1["served"]
    assert document["interrupted"] is False
    assert "lost" in run.out.text
    assert_nothing_left(cluster, str(tmp_path))


# --- signals to the coordinator -----------------------------------------------------------------------------------


def _signal(run: Run, how: str) -> None:
    pid = run.proc.pid
    if how == "SIGINT":
        os.kill(pid, signal.SIGINT)  # the coordinator alone
    elif how == "SIGINT to the group":
        os.killpg(pid, signal.SIGINT)  # a terminal's Ctrl-C: the coordinator and its workers
    elif how == "SIGINT twice":
        os.killpg(pid, signal.SIGINT)
        os.killpg(pid, signal.SIGINT)  # the second while the hosts report: it must not cut the report short
    else:
        os.kill(pid, getattr(signal, how))


def _check_partial(run: Run) -> dict[str, Any]:
    document = run.document()
    assert document["interrupted"] is True
    hosts = document["hosts"]
    assert [h["destination"] for h in hosts] == ["c1", "c2"]
    assert all(h["lost"] is None and h["served_total"] > 0 for h in hosts), hosts  # each host's part
    assert sum(h["served_total"] for h in hosts) == document["summary"]["count"]
    assert [sum(h["served"][w] for h in hosts) for w in range(len(document["served"]))] == document["served"]
    return document


@pytest.mark.parametrize(
    ("how", "code"),
    [("SIGINT", 130), ("SIGINT to the group", 130), ("SIGINT twice", 130), ("SIGTERM", 143), ("SIGHUP", 129)],
)
def test_a_signal_stops_every_host_and_keeps_each_hosts_part(
    cluster: Cluster, tmp_path: Path, how: str, code: int
) -> None:
    before = opened(cluster)
    run = start(tmp_path, *load_args(cluster, tmp_path), *LONG)
    under_way(run, cluster, before)
    _signal(run, how)
    assert run.wait() == code, run.err.text
    _check_partial(run)
    assert_nothing_left(cluster, str(tmp_path))


def target_args(c: Cluster, tmp_path: Path, address: str, *more: str) -> list[str]:
    """Load from c1 and c2 at serve's workers in srv (known by their replies), observed there."""
    config = own_config(c, tmp_path)
    return ["latency", "--clients", "c1,c2", "--ssh-config", config, "--target", address, "-w", "3", *more]


def accepts_of(tally: Path) -> dict[int, int]:
    """serve's own count of its workers' accepts, by pid (its --json, written as it stops)."""
    return {w["pid"]: w["accepts"] for w in json.loads(tally.read_text())["counters"]}


def stop(serve: subprocess.Popen[str]) -> None:
    serve.send_signal(signal.SIGINT)
    assert serve.wait(60) == 0


@needs_bpftrace
def test_observe_on_the_server_host_counts_what_the_replies_and_serve_count(
    cluster: Cluster, tmp_path: Path, server: tuple[subprocess.Popen[str], str, Path]
) -> None:
    """--observe-on srv: observe runs in srv over the same engine for the load's window; its accepts per worker
    (the kernel's, bpftrace) equal the connections the replies gave each worker, and serve's own tally."""
    serve, address, tally = server
    run = start(
        tmp_path, *target_args(cluster, tmp_path, address, "--observe-on", "srv", "-n", str(OBSERVED), "-c", "6")
    )
    assert run.wait() == 0, run.err.text
    document = run.document()
    [seen] = document["evidence"]["observed_on"]
    assert (seen["host"], seen["traced"], seen["agrees"]) == ("srv", True, True), seen
    by_replies = {c["pid"]: document["served"][c["index"]] for c in document["counters"]}
    observed = {w["pid"]: w["accepts"] for w in seen["workers"]}
    assert {w["pid"]: w["served_by_replies"] for w in seen["workers"]} == by_replies
    assert observed == by_replies and sum(observed.values()) == OBSERVED and len(observed) == 3
    assert [sum(h["served"][w] for h in document["hosts"]) for w in range(3)] == document["served"]
    assert f"each worker's accepts equal the connections its replies named ({OBSERVED:,} in all)" in run.out.text
    assert_nothing_left(cluster, str(tmp_path), tree(serve))  # observe's Python and its bpftrace too
    stop(serve)
    assert accepts_of(tally) == observed


def test_an_observe_host_that_cannot_be_reached_is_one_line_and_leaves_nothing(
    cluster: Cluster, tmp_path: Path
) -> None:
    entry = cluster.ssh_config.read_text().split("\n\n")[-1]  # srv's, at an address nobody has
    ghost = entry.replace("Host srv", "Host ghost").replace(cluster.address("srv"), cluster.address("srv") + "9")
    config = own_config(cluster, tmp_path, "\n" + ghost)
    args = ["latency", "--clients", "c1,c2", "--ssh-config", config, "--target", f"{cluster.address('srv')}:9"]
    run = start(tmp_path, *args, "--observe-on", "ghost", *LONG)
    assert run.wait() == 1
    [line] = run.error_lines()
    assert line.startswith("accept-order: error: --observe-on ghost: could not be reached over ssh ("), line
    assert_nothing_left(cluster, str(tmp_path))


@needs_bpftrace
def test_an_observe_host_lost_mid_run_is_said_and_the_load_kept(
    cluster: Cluster, tmp_path: Path, server: tuple[subprocess.Popen[str], str, Path]
) -> None:
    """observe's Python in srv killed while the load runs: the load's result stands (exit 0), what became of the
    observation is said in its place, and its bpftrace ends with it."""
    serve, address, _ = server
    before = opened(cluster)
    run = start(
        tmp_path,
        # observe killed once both hosts opened UNDER_WAY_CONNECTS (a tenth of a second at RATE): 4 s to spare
        *target_args(cluster, tmp_path, address, "--observe-on", "srv", "-c", "4", "--duration", "4s"),
        *("--rate", str(RATE)),
    )
    under_way(run, cluster, before)
    _remote_python(cluster, "srv").kill()
    assert run.wait() == 0, run.err.text
    document = run.document()
    [seen] = document["evidence"]["observed_on"]
    assert seen["host"] == "srv" and seen["error"].startswith("--observe-on srv: its connection closed"), seen
    assert document["interrupted"] is False and all(h["lost"] is None for h in document["hosts"])
    assert sum(h["served_total"] for h in document["hosts"]) == document["summary"]["count"] > 0
    assert "observe on srv failed" in run.out.text
    assert_nothing_left(cluster, str(tmp_path), tree(serve))


@needs_bpftrace
def test_ctrl_c_against_a_server_elsewhere_observed_there(
    cluster: Cluster, tmp_path: Path, server: tuple[subprocess.Popen[str], str, Path]
) -> None:
    """--target and --observe-on: a Ctrl-C keeps each host's part and what observe saw until then. Observe (attached
    before the load, stopped after it) counts exactly what serve counts; the replies' counts are at most those, by
    the -c connections in flight when the load stopped (accepted, their replies never counted)."""
    serve, address, tally = server
    before = opened(cluster)
    run = start(tmp_path, *target_args(cluster, tmp_path, address, "--observe-on", "srv", "-c", "4", *LONG))
    under_way(run, cluster, before)
    os.killpg(run.proc.pid, signal.SIGINT)
    assert run.wait() == 130, run.err.text
    document = _check_partial(run)
    assert_nothing_left(cluster, str(tmp_path), tree(serve))
    stop(serve)
    [seen] = document["evidence"]["observed_on"]
    observed = {w["pid"]: w["accepts"] for w in seen["workers"]}
    assert observed == accepts_of(tally)
    served = {c["pid"]: document["served"][c["index"]] for c in document["counters"]}
    assert set(served) <= set(observed) and all(served[pid] <= observed[pid] for pid in served), (served, observed)
    assert 0 <= sum(observed.values()) - sum(served.values()) <= 4, (served, observed)


@pytest.mark.parametrize("where", ["workers here", "serve in srv, observed there"])
def test_sigkill_of_the_coordinator_ends_every_hosts_load(
    cluster: Cluster, tmp_path: Path, request: pytest.FixtureRequest, where: str
) -> None:
    """The issue's "the engine's channel closing must end them": nobody is left to ask the hosts to stop; each ssh,
    in a session of its own, sees its pipe close and ends its session, and the remote side ends its load (and
    observe its bpftrace) as its channel closes: in well under execnet's own last resort (it sends the host's
    Python a SIGINT after 5 s of a task that outlives its channel, and exits it 10 s later). Here that takes
    about 0.4 s."""
    spared: frozenset[int] = frozenset()
    if where == "workers here":
        args = load_args(cluster, tmp_path)
    else:
        if shutil.which("bpftrace") is None:
            pytest.skip("observe's own count needs bpftrace")
        serve, address, _ = request.getfixturevalue("server")
        spared = tree(serve)
        args = target_args(cluster, tmp_path, address, "--observe-on", "srv", "-c", "4")
    before = opened(cluster)
    run = start(tmp_path, *args, *LONG)
    under_way(run, cluster, before)
    running = {name: remote_processes(cluster, name, spared) for name in cluster.names}
    assert running["c1"] and running["c2"] and bool(running["srv"]) == bool(spared), running
    run.proc.kill()
    assert run.wait() == -signal.SIGKILL
    wait_for(
        lambda: [p for name in cluster.names for p in remote_processes(cluster, name, spared)],
        lambda left: left == [],
        CHANNEL_CLOSED_S,
        "the hosts' loads (and observe) to end as their channels closed",
    )
    assert_nothing_left(cluster, str(tmp_path), spared)


# --- the client host's Python ---------------------------------------------------------------------------------------


def _wrapper(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_another_version_on_a_host_is_one_line_with_both_versions(cluster: Cluster, tmp_path: Path) -> None:
    fake = tmp_path / "old" / "accept_order"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('__version__ = "0.0.1"\n')
    python = _wrapper(tmp_path, "old-python", f'PYTHONPATH={fake.parent} exec {sys.executable} "$@"')
    run = start(tmp_path, *load_args(cluster, tmp_path), "--client-python", python, *LONG)
    assert run.wait() == 1
    [line] = run.error_lines()
    assert line == (
        f"accept-order: error: client host c1 runs accept-order 0.0.1, this one {VERSION}: install accept-order "
        f"{VERSION} there"
    )
    assert_nothing_left(cluster, str(tmp_path))


def test_a_python_without_accept_order_is_one_line(cluster: Cluster, tmp_path: Path) -> None:
    python = _wrapper(tmp_path, "bare-python", f'exec {sys.executable} -S "$@"')  # -S: no site-packages
    run = start(tmp_path, *load_args(cluster, tmp_path), "--client-python", python, *LONG)
    assert run.wait() == 1
    [line] = run.error_lines()
    assert line.startswith("accept-order: error: client host c1: accept-order is not installed for "), line
    assert "No module named 'accept_order'" in line and "--client-python" in line
    assert_nothing_left(cluster, str(tmp_path))


def test_a_python_that_is_not_there_is_one_line(cluster: Cluster, tmp_path: Path) -> None:
    run = start(tmp_path, *load_args(cluster, tmp_path), "--client-python", str(tmp_path / "no-python"), *LONG)
    assert run.wait() == 1
    [line] = run.error_lines()
    assert line.startswith(f"accept-order: error: client host c1: its Python {tmp_path}/no-python did not"), line
    assert "No such file or directory" in line or "not found" in line, line
    assert_nothing_left(cluster, str(tmp_path))
