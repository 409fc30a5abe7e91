"""lighttpd (Debian's, with mod_magnet) as a server the tool launches: its access log agrees with the tool in
both modes (in request order, although lighttpd writes it in per-worker chunks), every idle worker is woken
for every connection (the herd both event handlers set up), one worker is the master, and a missing lighttpd
or a busy port is one line. That it leaves nothing, run or SIGKILLed: the contract every launched kind keeps
(test_kind_contract.py)."""

from __future__ import annotations

import socket

import psutil
import pytest
from conftest import assert_one_error_line, http_fetch, run_cli

from accept_order.core.processes import usage
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.probes.fd_table import open_files
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.proc_waits import thread_wait
from accept_order.servers.launched import lighttpd
from accept_order.servers.launched.lighttpd import LighttpdServer, lighttpd_missing
from accept_order.servers.registry import checked

if lighttpd_missing():
    pytest.skip(f"lighttpd launched runs: {lighttpd_missing()}", allow_module_level=True)

CONNECTIONS = 12


def launched(mode: str, workers: int = 3) -> LighttpdServer:
    return LighttpdServer(checked(ServerSpec(kind="lighttpd", mode=mode, workers=workers)))


@pytest.mark.parametrize(("mode", "call"), [("max-worker", "epoll_wait"), ("poll", "poll")])
def test_every_idle_worker_is_woken_and_the_log_agrees(mode: str, call: str) -> None:
    """Each worker waits for the one listener with a non-exclusive wait entry (epoll without EPOLLEXCLUSIVE,
    or poll): each connection wakes every idle worker, which sleeps again whether or not it won. lighttpd's
    own log names the worker each reply named, in request order (it writes the lines in per-worker chunks)."""
    with launched(mode) as server:
        (listener,) = listening_sockets(server.port)
        for pid in server.pids:
            assert thread_wait(pid, pid).call == call
            if call == "epoll_wait":
                (epoll,) = [f for f in open_files(pid).values() if f.kind == "eventpoll"]
                assert [w.exclusive for w in epoll.watches if w.inode == listener.inode] == [False]
        before = {pid: usage(pid)[0] for pid in server.pids}
        seen = []
        for _ in range(CONNECTIONS):
            server.settle()
            seen.append(http_fetch(server.address))
        server.settle()
        woken = {pid: usage(pid)[0] - before[pid] for pid in server.pids}
    assert all(n >= CONNECTIONS for n in woken.values()), woken
    assert server.witness() == {"source": "lighttpd access log", "requests": [list(row) for row in seen]}


def test_one_worker_is_the_master() -> None:
    """max-worker 1 forks nothing: the master serves."""
    result = session.run_sequential(
        ServerSpec(kind="lighttpd", mode="max-worker", workers=1), SequentialLoad(connections=3)
    )
    assert result.served == 3 and {r.worker for r in result.records} == {0}


def test_cli_run() -> None:
    run = run_cli(["run", "--server", "lighttpd", "-m", "poll", "-n", "6", "--work-us", "200"])
    assert run.exit_code == 0, run.output
    assert "mode lighttpd poll" in run.stdout
    assert "lighttpd access log: the same worker for each of the 6 served connections, in order" in run.stdout
    modes = run_cli(["modes"]).stdout
    assert "--server lighttpd" in modes and "max-worker" in modes


def test_accept_batch_is_refused() -> None:
    result = run_cli(["run", "--server", "lighttpd", "--accept-batch", "4", "-n", "3"])
    assert_one_error_line(result, 2, "--accept-batch does not apply to lighttpd")


def test_a_missing_lighttpd_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lighttpd.os.path, "exists", lambda path: False)
    assert lighttpd_missing() == (
        "lighttpd's modules are missing (mod_magnet.so, mod_accesslog.so): "
        "apt-get install lighttpd lighttpd-modules-lua"
    )


def test_port_in_use_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import accept_order.servers.modes.reuseport as reuseport

    monkeypatch.setattr(reuseport, "refuse_foreign_group", lambda *args: None)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli(["run", "--server", "lighttpd", "--port", str(port), "-n", "3"])
    assert_one_error_line(result, 1, "lighttpd exited with status")
    assert not psutil.Process().children(recursive=True)
