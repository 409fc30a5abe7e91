"""Caddy (Debian's caddy 2.6, Go) as a server the tool launches: one process and one worker whatever --workers
says, its access log agrees with the tool, its listener is watched by Go's one netpoller epoll (one thread
waits in it), its processes and files are the tool's to remove, and a missing caddy or a busy port is one
line."""

from __future__ import annotations

import os
import socket
from collections import Counter

import psutil
import pytest
from conftest import assert_one_error_line, gone, http_fetch_many, run_cli

from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.probes.fd_table import open_files
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.proc_waits import thread_ids, thread_wait
from accept_order.servers.launched.caddy import CaddyServer, caddy_missing
from accept_order.servers.registry import checked

if caddy_missing():
    pytest.skip(f"Caddy launched runs: {caddy_missing()}", allow_module_level=True)

EPOLLEXCLUSIVE, EPOLLET = 1 << 28, 1 << 31


def launched() -> CaddyServer:
    return CaddyServer(checked(ServerSpec(kind="caddy", mode="netpoller", workers=3)))


def test_one_worker_and_the_access_log_agrees_with_the_records() -> None:
    """--workers 3 is one worker (the process); Caddy's log has every connection, in order, by client port."""
    result = session.run_sequential(
        ServerSpec(kind="caddy", mode="netpoller", workers=3), SequentialLoad(connections=12)
    )
    assert result.server.workers == 1 and result.failed == 0 and result.served == 12, result.records
    witness = result.evidence["witness"]
    assert witness["source"] == "caddy access log"
    assert [pid for pid, _ in witness["requests"]] == [r.pid for r in result.records]
    assert Counter(pid for pid, _ in witness["requests"]) == Counter(r.pid for r in result.records)
    assert {r.worker for r in result.records} == {0}


def test_one_netpoller_epoll_watches_the_listener_and_one_thread_waits_in_it() -> None:
    """One listener, in one epoll instance (Go's netpoller), edge-triggered, without EPOLLEXCLUSIVE; of the
    process's threads, one is blocked in epoll_pwait on that epoll (the rest wait on futexes)."""
    with launched() as server:
        (pid,) = server.pids
        (listener,) = listening_sockets(server.port)
        epolls = {fd: f for fd, f in open_files(pid).items() if any(w.inode == listener.inode for w in f.watches)}
        assert len(epolls) == 1, epolls
        ((fd, epoll),) = epolls.items()
        (watch,) = [w for w in epoll.watches if w.inode == listener.inode]
        assert watch.events & EPOLLET and not watch.events & EPOLLEXCLUSIVE, hex(watch.events)
        waits = [thread_wait(pid, tid) for tid in thread_ids(pid)]
        polling = [w for w in waits if w.call in ("epoll_wait", "epoll_pwait")]
        assert len(waits) > 1 and len(polling) == 1 and polling[0].fd == fd, waits


def test_every_request_answered_is_logged_and_nothing_is_left() -> None:
    """Concurrent requests, then the stop: the log holds each client port we saw, every reply names the one
    process; no process and no file remain, and Caddy's own files (autosaved config) were in the run's."""
    with launched() as server:
        (pid,) = server.pids
        directory = server.directory

        seen = http_fetch_many(server.address)
        assert os.path.exists(os.path.join(directory, "config", "caddy", "autosave.json"))
    assert {p for p, _ in seen} == {pid}
    assert sorted(map(tuple, server.witness()["requests"])) == sorted(seen)
    assert gone([pid]) and not os.path.exists(directory)


def test_cli_run_says_one_worker() -> None:
    run = run_cli(["run", "--server", "caddy", "-w", "3", "-n", "4"])
    assert run.exit_code == 0, run.output
    assert "mode caddy netpoller, 1 worker," in run.stdout and "caddy access log" in run.stdout
    modes = run_cli(["modes"])
    assert "--server caddy" in modes.stdout and "netpoller" in modes.stdout


def test_accept_batch_is_refused() -> None:
    result = run_cli(["run", "--server", "caddy", "--accept-batch", "4", "-n", "3"])
    assert_one_error_line(result, 2, "--accept-batch does not apply to caddy")


def test_a_missing_caddy_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    result = run_cli(["run", "--server", "caddy", "-n", "3"])
    assert_one_error_line(result, 1, "caddy is not installed: apt-get install caddy")


def test_port_in_use_is_one_line_naming_caddys_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """(The tool refuses a port with a listener before launching; this is a listener that came after that
    check, without SO_REUSEPORT, so Caddy's own SO_REUSEPORT does not let it join.)"""
    import accept_order.servers.modes.reuseport as reuseport

    monkeypatch.setattr(reuseport, "refuse_foreign_group", lambda *args: None)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli(["run", "--server", "caddy", "--port", str(port), "-n", "5"])
    assert_one_error_line(result, 1, "caddy exited with status 1:", "bind: address already in use")
    assert not psutil.Process().children(recursive=True)


def test_several_servers_keep_their_workers() -> None:
    """--workers is the others' (Caddy's one process does not make them one worker each)."""
    result = run_cli(["compare", "--servers", "caddy,builtin", "--modes", "default", "-w", "2", "-n", "4"])
    assert result.exit_code == 0, result.output
    rows = {
        line.split()[0]: line.split() for line in result.stdout.splitlines() if line.strip()[:5] in ("caddy", "built")
    }
    assert rows["caddy"][2:6] == ["0", "0", "0", "0"] and rows["caddy"][6] == "4"
    served = rows["builtin"][6:8]  # served per worker: two numbers, two workers
    assert all(n.isdigit() for n in served) and sum(map(int, served)) == 4, rows["builtin"]
    assert "2 workers (caddy 1)," in result.stdout
