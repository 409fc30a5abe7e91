"""The kernel counters of a run at an attached server in another network namespace are that namespace's, not ours.

'latency --attach PID' of a server in a namespace of its own read ListenOverflows and the rest from this process's
/proc/net/netstat: another namespace's counters, said as the run's ('host-wide ...'). They are now read from
/proc/PID/net/netstat, which procfs gives as PID's namespace's, and which a user without ptrace access to PID may
read too (nobody reads root's; /proc/PID/ns/net it may not); where they cannot be read, the line says so and shows
none of ours. The witnesses: the namespace's own /proc/net/netstat read from inside it (nsenter, or the process
itself), and ours, which a listener here that never accepts moves during the run."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import run_cli

from accept_order.probes.evidence import EvidenceCapture
from accept_order.probes.netstat import parse_netstat
from accept_order.probes.server_netns import netstat_namespace, netstat_of
from accept_order.render.evidence import counters_text

UNSHARE, IP, NSENTER, SETPRIV = (shutil.which(name) for name in ("unshare", "ip", "nsenter", "setpriv"))
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or None in (UNSHARE, IP, NSENTER), reason="needs root, unshare(1), ip(8) and nsenter(1)"
)
OVERFLOWS = "TcpExtListenOverflows"


def _theirs(pid: int) -> dict[str, int]:
    """pid's namespace's counters read from inside it (nsenter: setns, not /proc/PID/net)."""
    assert NSENTER is not None
    read = subprocess.run([NSENTER, "-t", str(pid), "-n", "cat", "/proc/net/netstat"], capture_output=True, text=True)
    assert read.returncode == 0, read.stderr
    return parse_netstat(read.stdout)


def _ours() -> dict[str, int]:
    with open("/proc/self/net/netstat", encoding="ascii") as f:
        return parse_netstat(f.read())


@pytest.fixture
def server_elsewhere() -> Iterator[tuple[int, str, int]]:
    """(pid, address, port) of `accept-order serve` in a network namespace of its own, reached over a veth pair."""
    assert UNSHARE is not None and IP is not None and NSENTER is not None
    port, net = 18000 + os.getpid() % 1000, os.getpid() % 250
    ours, theirs, address = f"aokc{os.getpid() % 100000}a", f"aokc{os.getpid() % 100000}b", f"10.213.{net}.2"
    # one worker, a queue of 2 and 2 ms a connection: 16 clients overflow it (the namespace's count moves)
    argv = [UNSHARE, "--net", sys.executable, "-m", "accept_order", "serve", "-w", "1", "--host", "0.0.0.0"]
    argv += ["--backlog", "2", "--work", "2ms"]
    server = subprocess.Popen([*argv, "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        for line in server.stdout:  # ends at its exit, if it never listens
            if "listening on" in line and line.startswith("accept-order serve"):
                break
        assert server.poll() is None, "the server did not start"
        inside = [NSENTER, "-t", str(server.pid), "-n", IP]
        for command in (
            [IP, "link", "add", ours, "type", "veth", "peer", "name", theirs, "netns", str(server.pid)],
            [IP, "addr", "add", f"10.213.{net}.1/30", "dev", ours],
            [IP, "link", "set", ours, "up"],
            [*inside, "addr", "add", f"{address}/30", "dev", theirs],
            [*inside, "link", "set", theirs, "up"],
        ):
            subprocess.run(command, check=True)
        yield server.pid, address, port
    finally:
        subprocess.run([IP, "link", "del", ours], capture_output=True)  # its peer goes with it
        server.terminate()
        server.communicate(timeout=60)


def _overflowing_here(stop: threading.Event) -> None:
    """A listener in our namespace that never accepts, connected to until `stop`: ListenOverflows moves here."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        while not stop.is_set():
            client = socket.socket()
            client.setblocking(False)
            try:
                client.connect(listener.getsockname())
            except BlockingIOError:
                pass
            client.close()
            stop.wait(0.005)  # a pace, not a wait for anything


def test_an_attached_servers_counters_are_its_namespaces(
    server_elsewhere: tuple[int, str, int], tmp_path: Path
) -> None:
    pid, address, port = server_elsewhere
    assert netstat_namespace(pid) != netstat_namespace("self")
    path = tmp_path / "run.json"
    stop = threading.Event()
    flood = threading.Thread(target=_overflowing_here, args=(stop,))
    theirs, ours = _theirs(pid), _ours()
    flood.start()
    try:
        result = run_cli(
            ["latency", "--attach", str(pid), "--host", address, "--port", str(port), "-n", "300", "-c", "16"]
            + ["--json", str(path)],
            columns=1000,
        )
    finally:
        stop.set()
        flood.join(timeout=30)
    assert result.exit_code == 0, result.output
    theirs_moved = _theirs(pid)[OVERFLOWS] - theirs[OVERFLOWS]
    assert _ours()[OVERFLOWS] > ours[OVERFLOWS], "ours did not move: nothing told the namespaces apart"
    evidence = json.loads(path.read_text())["evidence"]
    # the server's namespace's own count over the command (its only listener is the server's, loaded by this run
    # alone between the tool's two readings), not ours, which the flood moved too; 0 would tell no reading apart
    assert theirs_moved > 0, "the server's queue did not overflow"
    assert evidence["counters"].get(OVERFLOWS) == theirs_moved, (evidence, theirs_moved)
    assert netstat_namespace(evidence["counters_pid"]) == netstat_namespace(pid)
    assert f"the server's network namespace, read from /proc/{evidence['counters_pid']}/net/netstat" in result.stdout


def test_unread_counters_are_said_and_ours_not_shown(server_elsewhere: tuple[int, str, int]) -> None:
    pid, _, port = server_elsewhere

    def refused(of: int) -> dict[str, int]:
        raise PermissionError(13, f"/proc/{of}/net/netstat: Permission denied")

    drops = iter([3, 10])  # its listeners' sk_drops at start and end, read over netlink in its namespace
    capture = EvidenceCapture(
        read_counters_of=refused, read_drops=lambda port, host, pids: next(drops), list_listeners=lambda port, pids: []
    )
    capture.before()  # ours: a launched server's would be these
    capture.started(port, [pid])
    evidence = capture.after(port)
    assert evidence["counters"] == {} and not evidence["counters_available"], evidence
    said = counters_text(evidence).plain
    assert "not read in the server's network namespace" in said and "Permission denied" in said, said
    # the listeners' own drops are read all the same: the line a report of several runs gives for them says them
    assert "the server's listeners dropped 7 handshake packets" in said, said


CHILD = """
import socket, sys
from accept_order.probes.netstat import parse_netstat
here = lambda: parse_netstat(open("/proc/self/net/netstat").read())["TcpExtListenOverflows"]
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
clients = []
while here() < 3:  # past its queue of 1 (2 complete), each SYN is dropped at once on loopback
    clients.append(socket.socket())
    clients[-1].setblocking(False)
    try:
        clients[-1].connect(listener.getsockname())
    except BlockingIOError:
        pass
print(here(), flush=True)
sys.stdin.read()
"""
AS_NOBODY = """
import sys
from accept_order.probes.server_netns import netstat_namespace, netstat_of
pid = int(sys.argv[1])
print(netstat_namespace(pid) != netstat_namespace("self"), netstat_of(pid)["TcpExtListenOverflows"])
"""


@pytest.mark.skipif(SETPRIV is None, reason="needs setpriv(1)")
def test_a_user_without_ptrace_access_reads_the_namespaces_counters() -> None:
    """/proc/PID/net/netstat is PID's namespace's (the count PID reads in its own namespace), and nobody may read root's
    and tell it apart from its own, where it may not read /proc/PID/ns/net."""
    assert UNSHARE is not None and SETPRIV is not None
    child = subprocess.Popen(
        [UNSHARE, "--net", "sh", "-c", f"ip link set lo up && exec {sys.executable} -c '{CHILD}'"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        own = int(child.stdout.readline())
        argv = [SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", sys.executable, "-c", AS_NOBODY]
        asked = subprocess.run([*argv, str(child.pid)], capture_output=True, text=True)
        assert asked.returncode == 0, asked.stderr
        assert asked.stdout.split() == ["True", str(own)], (asked.stdout, own)
    finally:
        child.kill()
        child.wait(timeout=30)


def test_a_worker_gone_by_the_end_is_read_through_another(server_elsewhere: tuple[int, str, int]) -> None:
    """The counters are read through whichever of the server's processes is still in its namespace: the one read at
    the start may exit (a worker killed mid-run); with every one gone the line says that, not 'no /proc/net/netstat'
    (which read as a host without procfs)."""
    pid, _, _ = server_elsewhere
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
        children = [int(p) for p in f.read().split()]
    assert children, "serve -w 1 has a worker"

    def first_gone(after_reads: int) -> Callable[[int], dict[str, int]]:
        """/proc/PID/net/netstat read, but for `pid`'s after its first reading; for every pid's after `after_reads`."""
        reads: list[int] = []

        def read(of: int) -> dict[str, int]:
            reads.append(of)
            if (of == pid and reads.count(pid) > 1) or len(reads) > after_reads:
                raise FileNotFoundError(2, f"No such file or directory: '/proc/{of}/net/netstat'")
            return netstat_of(of)

        return read

    for after_reads, read in ((3, True), (1, False)):
        capture = EvidenceCapture(read_counters_of=first_gone(after_reads), read_drops=lambda port, host, pids: None)
        capture.before()
        capture.started(0, [pid, *children])
        evidence = capture.after()
        said = counters_text(evidence).plain
        assert evidence["counters_available"] is read and ("counters_unread" in evidence) is not read, evidence
        assert "/proc/net/netstat)" not in said, said
        if not read:
            assert "the server's counters could not be read at the end: [Errno 2]" in said, said
