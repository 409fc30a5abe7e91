"""uWSGI (PyPI's pyuwsgi) as a server the tool launches: its request log agrees with the tool, each mode sets up
the wait the kernel shows (a herd of epolls, the thunder lock's futex, one SO_REUSEPORT socket), its processes
and files are the tool's to remove, and a missing pyuwsgi is one line."""

from __future__ import annotations

import ctypes
import os
import re
import signal
import socket
from collections import Counter
from pathlib import Path

import psutil
import pytest
from conftest import assert_one_error_line, gone, http_fetch_many, run_cli, wait_for

from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.experiments.order.result import RunResult
from accept_order.probes.listeners import listening_sockets
from accept_order.servers.launched.uwsgi import UwsgiServer, uwsgi_missing
from accept_order.servers.registry import checked

if uwsgi_missing():
    pytest.skip(f"uWSGI launched runs: {uwsgi_missing()}", allow_module_level=True)

CONNECTIONS = 18
MODES = ["default", "thunder-lock", "reuse-port"]
EPOLL_WAIT, FUTEX = 232, 202
EPOLLEXCLUSIVE = 1 << 28


def uwsgi_run(mode: str, connections: int = CONNECTIONS, **spec: object) -> RunResult:
    server = ServerSpec(kind="uwsgi", mode=mode, workers=3, **spec)  # type: ignore[arg-type]
    return session.run_sequential(server, SequentialLoad(connections=connections))


def launched(mode: str, workers: int = 3) -> UwsgiServer:
    return UwsgiServer(checked(ServerSpec(kind="uwsgi", mode=mode, workers=workers)))


def syscall(pid: int) -> int:
    """The syscall a blocked task waits in (/proc/PID/syscall's first field)."""
    return int(Path(f"/proc/{pid}/syscall").read_text().split()[0])


def socket_inode(pid: int, fd: int) -> int | None:
    link = os.readlink(f"/proc/{pid}/fd/{fd}")
    return int(link[len("socket:[") : -1]) if link.startswith("socket:[") else None


def epoll_watches(pid: int) -> dict[int, int]:
    """{watched inode: events} over every epoll fd the process holds (/proc/PID/fdinfo)."""
    watches: dict[int, int] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:[eventpoll]":
            continue
        for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
            # tfd:        3 events:       19 data:                3  pos:0 ino:2530d6 sdev:9
            match = re.match(r"tfd:\s*\d+\s+events:\s*([0-9a-f]+).*\bino:([0-9a-f]+)", line)
            if match:
                watches[int(match[2], 16)] = int(match[1], 16)
    return watches


def reuseport_of(pid: int, fd: int) -> int:
    """SO_REUSEPORT of another process's socket, read through pidfd_getfd (as root)."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        mine = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
        assert mine >= 0, os.strerror(ctypes.get_errno())
    finally:
        os.close(pidfd)
    with socket.socket(fileno=mine) as sock:
        return sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT)


@pytest.mark.parametrize("mode", MODES)
def test_request_log_agrees_with_the_records(mode: str) -> None:
    """uWSGI's own log names the same worker, in the same order, for every connection; counts agree."""
    result = uwsgi_run(mode)
    assert result.failed == 0 and result.served == CONNECTIONS, result.records
    witness = result.evidence["witness"]
    assert witness["source"] == "uwsgi request log"
    # uWSGI logs a request once it has replied, so two connections' lines can land in either order: the
    # client's port says which line is which connection.
    logged = {port: pid for pid, port in witness["requests"]}
    assert len(logged) == len(witness["requests"]) == CONNECTIONS
    assert {r.client_port: r.pid for r in result.records} == logged
    assert Counter(logged.values()) == Counter(r.pid for r in result.records)
    assert set(logged.values()) <= {c.pid for c in result.counters}


def test_each_worker_logs_its_requests_before_it_waits_again() -> None:
    """No request line waits for the master: held stopped here (a master the scheduler runs late), it writes
    none, and every request answered is in the log once the workers wait again. (With a req-logger the
    master wrote them, one per turn of its loop, and exited at `q` without the rest: 34 of 40 lost.)"""
    with launched("default", workers=2) as server:
        assert server.master is not None
        master = server.master.pid
        os.kill(master, signal.SIGSTOP)
        try:
            seen = http_fetch_many(server.address)
            wait_for(lambda: server.waiting(server.pids), bool, 30.0, "every worker back in its wait")
            lines = Path(server.directory, server.request_log).read_text().splitlines()
        finally:
            os.kill(master, signal.SIGCONT)
    logged = [row for row in (server.parse_request(line.split()) for line in lines) if row is not None]
    assert sorted(logged) == sorted(seen)
    assert sorted(map(tuple, server.witness()["requests"])) == sorted(seen)  # and the stop kept them


def test_thunder_lock_takes_turns() -> None:
    """One worker waits in epoll, the others queue on the lock: an idle server's workers rotate."""
    result = uwsgi_run("thunder-lock", connections=12)
    first = [r.worker for r in result.records[:3]]
    assert sorted(first) == [0, 1, 2]
    assert [r.worker for r in result.records] == first * 4
    assert result.verdict.expected


@pytest.mark.parametrize("mode", ["default", "reuse-port"])
def test_shared_socket_modes_wake_every_worker(mode: str) -> None:
    """Every worker's own epoll watches the one listener, without EPOLLEXCLUSIVE, and sleeps in epoll_wait."""
    with launched(mode) as server:
        (listener,) = listening_sockets(server.port)
        for pid in server.pids:
            assert syscall(pid) == EPOLL_WAIT
            events = epoll_watches(pid)[listener.inode]
            assert events & EPOLLEXCLUSIVE == 0, hex(events)
        assert len({os.readlink(f"/proc/{pid}/fd/3") for pid in server.pids}) == 1  # the master's one socket


def test_thunder_lock_holder_waits_in_epoll_the_rest_on_the_lock() -> None:
    with launched("thunder-lock") as server:
        (listener,) = listening_sockets(server.port)
        waits = sorted(syscall(pid) for pid in server.pids)
        assert waits == [FUTEX, FUTEX, EPOLL_WAIT]
        assert all(listener.inode in epoll_watches(pid) for pid in server.pids)
        holder = [pid for pid in server.pids if syscall(pid) == EPOLL_WAIT]
        assert Path(f"/proc/{holder[0]}/wchan").read_text() == "do_epoll_wait"


@pytest.mark.parametrize(("mode", "reuseport"), [("default", 0), ("reuse-port", 1)])
def test_reuse_port_sets_the_flag_on_the_masters_one_socket(mode: str, reuseport: int) -> None:
    """--reuse-port on Linux: still one listener, bound by the master and inherited by every worker."""
    with launched(mode) as server:
        assert server.master is not None
        (listener,) = listening_sockets(server.port)
        holders = [server.master.pid, *server.pids]
        fds = {
            pid: [fd for fd in map(int, os.listdir(f"/proc/{pid}/fd")) if socket_inode(pid, fd) == listener.inode]
            for pid in holders
        }
        assert all(len(found) == 1 for found in fds.values()), fds
        assert {reuseport_of(pid, found[0]) for pid, found in fds.items()} == {reuseport}


def test_processes_and_files_are_the_tools() -> None:
    seen: dict[str, object] = {}
    me = psutil.Process()

    def on_record(_: object) -> None:
        if "master" not in seen:
            (master,) = [p for p in me.children() if "pyuwsgi" in " ".join(p.cmdline())]
            seen["master"] = master.pid
            seen["workers"] = [w.pid for w in master.children()]
            seen["directory"] = os.path.dirname(master.cmdline()[-1])

    server = ServerSpec(kind="uwsgi", mode="thunder-lock", workers=2, work_us=200)
    result = session.run_sequential(server, SequentialLoad(connections=5), on_record)
    assert result.served == 5
    assert gone([seen["master"], *seen["workers"]])  # type: ignore[list-item]
    assert not os.path.exists(str(seen["directory"]))


def test_a_killed_master_takes_its_workers() -> None:
    """no-orphans: the workers die with a SIGKILLed master (the tool does not have to find them)."""
    with launched("default") as server:
        assert server.master is not None
        workers = list(server.pids)
        os.kill(server.master.pid, signal.SIGKILL)
        server.master.wait()
        wait_for(lambda: gone(workers), bool, 5.0, "the workers of a killed master to die")


def test_cli_run_and_compare() -> None:
    run = run_cli(["run", "--server", "uwsgi", "-m", "thunder-lock", "-n", "6"])
    assert run.exit_code == 0, run.output
    assert "mode uwsgi thunder-lock" in run.stdout and "uwsgi request log" in run.stdout
    compare = run_cli(["compare", "--servers", "uwsgi", "-n", "6"])
    assert compare.exit_code == 0, compare.output
    rows = [line.split()[:2] for line in compare.stdout.splitlines() if line.strip().startswith("uwsgi")]
    assert rows == [["uwsgi", mode] for mode in MODES]
    modes = run_cli(["modes"])
    assert "--server uwsgi" in modes.stdout and "thunder-lock" in modes.stdout


def test_accept_batch_is_refused() -> None:
    result = run_cli(["run", "--server", "uwsgi", "--accept-batch", "4", "-n", "3"])
    assert_one_error_line(result, 2, "--accept-batch does not apply to uwsgi")


def test_a_missing_pyuwsgi_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyuwsgi" else real(name, *a))
    assert uwsgi_missing() == (
        "pyuwsgi is not installed: pip install 'accept-order[servers]' (pyuwsgi)"
        ", or from a clone: pip install '.[servers]'"
    )


def test_port_in_use_is_one_line_naming_uwsgis_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """The line that names the cause (bind()), not the root warning every start prints first. (The tool
    refuses a port with a listener before launching; this is a listener that came after that check.)"""
    import accept_order.servers.modes.reuseport as reuseport

    monkeypatch.setattr(reuseport, "refuse_foreign_group", lambda *args: None)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli(["run", "--server", "uwsgi", "--port", str(port), "-n", "5"])
    assert_one_error_line(result, 1, "uwsgi exited with status 1", "bind(): Address already in use")
    assert not psutil.Process().children(recursive=True)
