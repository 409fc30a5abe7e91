"""Puma (Debian's puma 5.6, cluster mode) as a server the tool launches: each worker waits for the master's one
socket in one thread's select (a herd), less-busy is Puma's own setting, and a missing puma or a busy port is
one line. That its request log agrees with the tool and that it leaves nothing, run or SIGKILLed: the contract
every launched kind keeps (test_kind_contract.py)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import psutil
import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.analysis.herd import HERD_THRESHOLD
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.experiments.order.result import RunResult
from accept_order.probes.fd_table import open_files
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.proc_waits import thread_wait
from accept_order.servers.launched.puma import PUMA_MODES, PumaServer, puma_missing, render_config
from accept_order.servers.registry import checked

if puma_missing():
    pytest.skip(f"Puma launched runs: {puma_missing()}", allow_module_level=True)

CONNECTIONS = 15
MODES = ["cluster", "less-busy"]


def puma_run(mode: str, connections: int = CONNECTIONS, **spec: object) -> RunResult:
    server = ServerSpec(kind="puma", mode=mode, workers=3, **spec)  # type: ignore[arg-type]
    return session.run_sequential(server, SequentialLoad(connections=connections))


def launched(mode: str, workers: int = 2) -> PumaServer:
    return PumaServer(checked(ServerSpec(kind="puma", mode=mode, workers=workers)))


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


@pytest.mark.parametrize("mode", MODES)
def test_one_connection_wakes_every_worker(mode: str) -> None:
    """select() wakes every idle worker's server thread for each connection. (Puma's log agrees with the
    records in its default mode by test_kind_contract.py; here also with less-busy's sleep.)"""
    result = puma_run(mode)
    assert result.failed == 0 and result.served == CONNECTIONS, result.records
    assert result.evidence["witness"]["requests"] == [[r.pid, r.client_port] for r in result.records]
    woken = result.verdict.woken_per_connection
    assert woken is not None and woken >= HERD_THRESHOLD, woken


def test_each_worker_waits_in_one_threads_select_on_the_masters_socket() -> None:
    """One listener, held by the master and every worker; in each worker exactly one thread sleeps in select
    with it in its set (read from memory as root); no epoll watches it."""
    with launched("cluster") as server:
        assert server.master is not None
        (listener,) = listening_sockets(server.port)
        for pid in [server.master.pid, *server.pids]:
            assert listener.inode in socket_inodes(pid)
        for pid in server.pids:
            waits = [thread_wait(pid, int(tid)) for tid in os.listdir(f"/proc/{pid}/task")]
            selecting = [w for w in waits if w.call in ("select", "pselect6")]
            assert len(selecting) == 1, waits
            if os.geteuid() == 0:
                fds = selecting[0].fds
                assert fds is not None and any(
                    os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{listener.inode}]" for fd in fds
                )
            epolls = [f for f in open_files(pid).values() if f.kind == "eventpoll"]  # the reactor's: clients only
            assert not any(w.inode == listener.inode for f in epolls for w in f.watches)


def test_less_busy_is_the_setting_in_pumas_config(tmp_path: Path) -> None:
    """The mode is Puma's own setting, in the config it reads (its effect is a 5 ms sleep of a busy worker
    between select and accept: timing, not something to assert)."""
    spec = checked(ServerSpec(kind="puma", mode="cluster"))
    configs = {mode: render_config(spec, PUMA_MODES[mode], 8080, str(tmp_path)) for mode in MODES}
    assert "wait_for_less_busy_worker 0.005" in configs["less-busy"]
    assert "wait_for_less_busy_worker" not in configs["cluster"]


def test_modes_lists_pumas() -> None:
    modes = run_cli(["modes"])
    assert "--server puma" in modes.stdout and "less-busy" in modes.stdout


def test_accept_batch_is_refused() -> None:
    result = run_cli(["run", "--server", "puma", "--accept-batch", "4", "-n", "3"])
    assert_one_error_line(result, 2, "--accept-batch does not apply to puma")


def test_a_missing_puma_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    result = run_cli(["run", "--server", "puma", "-n", "3"])
    assert_one_error_line(result, 1, "puma is not installed: apt-get install puma")


def test_port_in_use_is_one_line_naming_pumas_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ruby's exception without its source location. (The tool refuses a port with a listener before
    launching; this is a listener that came after that check.)"""
    import accept_order.servers.modes.reuseport as reuseport

    monkeypatch.setattr(reuseport, "refuse_foreign_group", lambda *args: None)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli(["run", "--server", "puma", "--port", str(port), "-n", "5"])
    assert_one_error_line(result, 1, "puma exited with status 1: Address already in use - bind(2)")
    assert not psutil.Process().children(recursive=True)
