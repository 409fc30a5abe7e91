"""Unicorn (Debian's unicorn 6.0) as a server the tool launches: each single-threaded worker waits for the
master's one socket in select (a herd), and a missing unicorn or a busy port is one line. That its request log
(Rack::CommonLogger, its default middleware) agrees with the tool and that it leaves nothing, run or
SIGKILLed: the contract every launched kind keeps (test_kind_contract.py)."""

from __future__ import annotations

import os
import socket

import psutil
import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.analysis.herd import HERD_THRESHOLD
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.experiments.order.result import RunResult
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.proc_waits import thread_wait
from accept_order.servers.launched.unicorn import UnicornServer, unicorn_missing
from accept_order.servers.registry import checked

if unicorn_missing():
    pytest.skip(f"Unicorn launched runs: {unicorn_missing()}", allow_module_level=True)

CONNECTIONS = 15


def unicorn_run(connections: int = CONNECTIONS) -> RunResult:
    server = ServerSpec(kind="unicorn", mode="prefork", workers=3)
    return session.run_sequential(server, SequentialLoad(connections=connections))


def launched(workers: int = 2) -> UnicornServer:
    return UnicornServer(checked(ServerSpec(kind="unicorn", mode="prefork", workers=workers)))


def inodes_of(pid: int, fds: tuple[int, ...]) -> set[int]:
    links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in fds]
    return {int(link[len("socket:[") : -1]) for link in links if link.startswith("socket:[")}


def socket_inodes(pid: int) -> set[int]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[len("socket:[") : -1]))
    return inodes


def test_one_connection_wakes_every_worker() -> None:
    """select() wakes every idle worker for each connection."""
    result = unicorn_run()
    assert result.failed == 0 and result.served == CONNECTIONS, result.records
    woken = result.verdict.woken_per_connection
    assert woken is not None and woken >= HERD_THRESHOLD, woken


def test_each_worker_waits_in_select_on_the_masters_socket() -> None:
    """One listener, held by the master and every worker; each worker (one thread) sleeps in select with it
    in its set, the master in select without it (its own pipe), as read from memory as root."""
    with launched() as server:
        assert server.master is not None
        (listener,) = listening_sockets(server.port)
        for pid in [server.master.pid, *server.pids]:
            assert listener.inode in socket_inodes(pid)
        for pid in server.pids:
            assert os.listdir(f"/proc/{pid}/task") == [str(pid)]
            wait = thread_wait(pid, pid)
            assert wait.call in ("select", "pselect6"), wait
            if os.geteuid() == 0:
                assert wait.fds is not None and listener.inode in inodes_of(pid, wait.fds)
        master = thread_wait(server.master.pid, server.master.pid)
        if os.geteuid() == 0 and master.fds is not None:
            assert listener.inode not in inodes_of(server.master.pid, master.fds)


def test_modes_lists_unicorns() -> None:
    modes = run_cli(["modes"])
    assert "--server unicorn" in modes.stdout and "prefork" in modes.stdout


def test_accept_batch_is_refused() -> None:
    result = run_cli(["run", "--server", "unicorn", "--accept-batch", "4", "-n", "3"])
    assert_one_error_line(result, 2, "--accept-batch does not apply to unicorn")


def test_a_missing_unicorn_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    result = run_cli(["run", "--server", "unicorn", "-n", "3"])
    assert_one_error_line(result, 1, "unicorn is not installed: apt-get install unicorn")


def test_port_in_use_is_one_line_naming_unicorns_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ruby's exception without its source location. (The tool refuses a port with a listener before
    launching; this is a listener that came after that check.)"""
    import accept_order.servers.modes.reuseport as reuseport

    monkeypatch.setattr(reuseport, "refuse_foreign_group", lambda *args: None)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli(["run", "--server", "unicorn", "--port", str(port), "-n", "5"])
    assert_one_error_line(result, 1, "unicorn exited with status 1: adding listener failed", "(in use)")
    assert not psutil.Process().children(recursive=True)
