"""Apache httpd (Debian's apache2) as a server the tool launches: its access log agrees with the tool in every
mode, each mode sets up the wait the kernel shows (children in accept, the accept mutex, listener threads in a
herd of epolls, SO_REUSEPORT buckets), its processes and files are the tool's to remove, and a missing
apache2 is one line."""

from __future__ import annotations

import os
import socket
import stat
from collections import Counter

import psutil
import pytest
from conftest import assert_one_error_line, gone, http_fetch, run_cli

from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.experiments.order.result import RunResult
from accept_order.probes.fd_table import open_files
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.proc_waits import thread_ids, thread_wait
from accept_order.servers.launched import apache_config, installed
from accept_order.servers.launched.apache import ApacheServer
from accept_order.servers.launched.apache_config import apache_missing, bucket_ratio, buckets
from accept_order.servers.registry import checked

if apache_missing():
    pytest.skip(f"Apache launched runs: {apache_missing()}", allow_module_level=True)

CONNECTIONS = 12
MODES = ["prefork", "prefork-mutex", "event", "buckets"]


def apache_run(mode: str, connections: int = CONNECTIONS, **spec: object) -> RunResult:
    server = ServerSpec(kind="apache", mode=mode, workers=3, **spec)  # type: ignore[arg-type]
    return session.run_sequential(server, SequentialLoad(connections=connections))


def launched(mode: str, workers: int = 3) -> ApacheServer:
    return ApacheServer(checked(ServerSpec(kind="apache", mode=mode, workers=workers)))


def voluntary_switches(pid: int, tid: int) -> int:
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches:"))


def listener_thread(pid: int) -> int:
    """An event child's listener thread: the one in epoll_wait at idle."""
    (tid,) = [t for t in thread_ids(pid) if thread_wait(pid, t).call in ("epoll_wait", "epoll_pwait")]
    return tid


@pytest.mark.parametrize("mode", MODES)
def test_access_log_agrees_with_the_records(mode: str) -> None:
    """Apache's own log names the same worker, in the same order, for every connection; counts agree."""
    result = apache_run(mode)
    assert result.failed == 0 and result.served == CONNECTIONS, result.records
    witness = result.evidence["witness"]
    assert witness["source"] == "apache access log"
    assert [pid for pid, _ in witness["requests"]] == [r.pid for r in result.records]
    # and the same connection: the client's port it logged is the one this run connected from
    assert witness["requests"] == [[r.pid, r.client_port] for r in result.records]
    assert Counter(pid for pid, _ in witness["requests"]) == Counter(r.pid for r in result.records)
    if mode.startswith("prefork"):  # accept() and the mutex hand connections to the longest idle child
        first = [r.worker for r in result.records[:3]]
        assert sorted(first) == [0, 1, 2]
        assert [r.worker for r in result.records] == first * (CONNECTIONS // 3)
        assert result.verdict.expected


def test_prefork_children_block_in_accept_and_the_mutex_needs_two_listeners() -> None:
    """One Listen: every child in accept4() on it. Two: one child waits in epoll, the others on the lock."""
    with launched("prefork") as server:
        waits = [thread_wait(pid, pid) for pid in server.pids]
        assert {w.call for w in waits} == {"accept4"}
    with launched("prefork-mutex") as server:
        waits = [thread_wait(pid, pid) for pid in server.pids]
        assert sorted((w.call, w.lock) for w in waits) == [("epoll_wait", False)] + [("futex", True)] * 2


def test_event_wakes_every_childs_listener_for_each_connection() -> None:
    """The herd, by the kernel's counters: each idle child's listener thread sleeps in an epoll that watches
    the shared socket without EPOLLEXCLUSIVE, so every connection wakes every one of them, winner or not."""
    with launched("event") as server:
        listeners = {pid: listener_thread(pid) for pid in server.pids}
        before = {pid: voluntary_switches(pid, tid) for pid, tid in listeners.items()}
        for _ in range(CONNECTIONS):
            server.settle()
            http_fetch(server.address)
        server.settle()
        woken = {pid: voluntary_switches(pid, tid) - before[pid] for pid, tid in listeners.items()}
    assert all(n >= CONNECTIONS for n in woken.values()), woken


def test_buckets_are_reuseport_listeners_child_i_on_bucket_i_mod_b() -> None:
    cpus = apache_config.online_cpus()
    assert cpus // bucket_ratio(3, cpus) <= 3 and buckets(3, 64) == 3 and buckets(2, 2) == 2 and buckets(5, 2) == 2
    with launched("buckets") as server:
        inodes = {sock.inode for sock in listening_sockets(server.port)}
        assert len(inodes) == buckets(3, cpus) >= 2
        watched = []
        for pid in server.pids:
            watches = [w for f in open_files(pid).values() if f.kind == "eventpoll" for w in f.watches]
            mine = {w.inode for w in watches if w.inode in inodes}
            assert len(mine) == 1, mine  # a child waits on its own bucket only
            watched.append(mine.pop())
        assert watched == [watched[i % len(inodes)] for i in range(len(watched))]
        assert len(set(watched)) == len(inodes)


def test_processes_and_files_are_the_tools() -> None:
    """Every process ends; the private directory is gone; while it ran it was 0700 (the children's user's
    when we are root, so that they can read the handler)."""
    seen: dict[str, object] = {}
    me = psutil.Process()

    def on_record(_: object) -> None:
        if "master" not in seen:
            (master,) = [p for p in me.children() if "apache2" in p.name()]
            seen["master"] = master.pid
            seen["workers"] = [w.pid for w in master.children()]
            directory = os.path.dirname(master.cmdline()[2])
            seen["directory"] = directory
            seen["mode"] = stat.S_IMODE(os.stat(directory).st_mode)

    server = ServerSpec(kind="apache", mode="prefork", workers=2, work_us=200)
    result = session.run_sequential(server, SequentialLoad(connections=4), on_record)
    assert result.served == 4
    assert seen["mode"] == 0o700
    assert gone([seen["master"], *seen["workers"]])  # type: ignore[list-item]
    assert not os.path.exists(str(seen["directory"]))


def test_cli_run_and_compare() -> None:
    run = run_cli(["run", "--server", "apache", "-m", "prefork-mutex", "-n", "6"])
    assert run.exit_code == 0, run.output
    assert "mode apache prefork-mutex" in run.stdout and "apache access log" in run.stdout
    compare = run_cli(["compare", "--servers", "apache", "-n", "4"])
    assert compare.exit_code == 0, compare.output
    rows = [line.split()[:2] for line in compare.stdout.splitlines() if line.strip().startswith("apache")]
    assert rows == [["apache", mode] for mode in MODES]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--accept-batch", "4"], "--accept-batch does not apply to apache"),
        (["-m", "buckets", "-w", "1"], "apache buckets needs --workers 2 or more"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], message: str) -> None:
    assert_one_error_line(run_cli(["run", "--server", "apache", *args, "-n", "3"]), 2, message)


def test_a_missing_apache2_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installed.shutil, "which", lambda name: None)  # nor on the PATH nor in /usr/sbin
    monkeypatch.setattr(installed.os, "access", lambda path, mode: False)
    assert apache_missing() == "apache2 is not installed here: apt-get install apache2"
    result = run_cli(["run", "--server", "apache", "-n", "3"])
    assert result.exit_code != 0 and "apt-get install apache2" in result.stderr


def test_port_in_use_is_one_line_naming_apaches_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """The line that names the cause (bind), not the notices around it. (The tool refuses a port with a
    listener before launching; this is a listener that came after that check.)"""
    import accept_order.servers.modes.reuseport as reuseport

    monkeypatch.setattr(reuseport, "refuse_foreign_group", lambda *args: None)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli(["run", "--server", "apache", "-m", "prefork", "--port", str(port), "-n", "3"])
    assert_one_error_line(result, 1, "apache exited with status 1", "could not bind")
    assert not psutil.Process().children(recursive=True)
