"""inspect of uWSGI with --thunder-lock where every worker runs at a look read 'epoll-herd' (1 look in 4 under
wrk): no worker sleeps in the lock nor in epoll_wait, each running one is taken for the waiter of its epoll, which
watches the listener without EPOLLEXCLUSIVE, as the default mode's herd workers' do. The kind knows the lock from
what uWSGI was started with (UwsgiKind.lock_first_of: --thunder-lock, or `thunder-lock = true` in an ini named on
its command line); the default mode reads as before."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from conftest import wait_for
from ended_at_once import end_at_once

from accept_order.core.spec import ServerSpec
from accept_order.experiments.inspect.result import InspectResult
from accept_order.experiments.inspect.run import inspect
from accept_order.probes.proc_waits import thread_wait
from accept_order.servers.launched.apache_config import LOCK_FIRST as APACHE_PREFORK
from accept_order.servers.launched.uwsgi import UwsgiServer, uwsgi_missing
from accept_order.servers.launched.uwsgi_thunder import THUNDER_LOCK, thunder_locked
from accept_order.servers.registry import checked, server_kind

PYUWSGI = ["/usr/bin/python3", "-c", "import sys, pyuwsgi; sys.exit(pyuwsgi.run())"]


def ini(tmp_path: Path, text: str, name: str = "uwsgi.ini") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_the_flag_on_the_command_line() -> None:
    assert thunder_locked(["uwsgi", "--http-socket", ":80", "--thunder-lock"])
    # the flag takes no argument: uWSGI stops at start with --thunder-lock=false ('doesn't allow an argument')
    assert not thunder_locked(["uwsgi", "--thunder-lock=true"])
    assert not thunder_locked(["uwsgi", "--http-socket", ":80", "--processes", "4"])
    assert not thunder_locked(["uwsgi", "--thunder-locks"])  # another word


def test_the_setting_in_an_ini_named_on_the_command_line(tmp_path: Path) -> None:
    on = ini(tmp_path, "[uwsgi]\nprocesses = 3\nthunder-lock = true\n")
    off = ini(tmp_path, "[uwsgi]\nthunder-lock = false\n", "off.ini")
    assert thunder_locked([*PYUWSGI, "--ini", on]) and thunder_locked(["uwsgi", f"--ini={on}"])
    assert thunder_locked(["uwsgi", on])  # uWSGI reads a lone *.ini as its config
    assert not thunder_locked([*PYUWSGI, "--ini", off])  # the launched default mode's ini says false
    assert not thunder_locked(["uwsgi", "--ini", on, "--ini", off])  # read in order, the later wins
    assert thunder_locked(["uwsgi", "--ini", off, "--thunder-lock"])
    other = ini(tmp_path, "[app]\nthunder-lock = true\n[uwsgi]\nprocesses = 3\n", "other.ini")
    assert not thunder_locked(["uwsgi", "--ini", other])  # another section is not uWSGI's
    assert not thunder_locked(["uwsgi", "--ini", str(tmp_path / "missing.ini")])  # unreadable: not known
    # a relative path is read from the server's working directory, never from ours
    assert thunder_locked(["uwsgi", "--ini", "uwsgi.ini"], str(tmp_path))
    assert not thunder_locked(["uwsgi", "--ini", "uwsgi.ini"])


def test_the_kind_declares_the_lock_it_was_started_with(tmp_path: Path) -> None:
    uwsgi = server_kind("uwsgi")
    assert uwsgi.lock_first_of(["uwsgi", "--thunder-lock"]) is THUNDER_LOCK
    assert uwsgi.lock_first_of(["uwsgi", "--ini", ini(tmp_path, "[uwsgi]\nthunder-lock = 1\n")]) is THUNDER_LOCK
    assert uwsgi.lock_first_of(["uwsgi"]) is None and uwsgi.lock_first is None  # default uWSGI: no lock
    assert server_kind("apache").lock_first_of(["apache2", "-k", "start"]) is APACHE_PREFORK  # a kind's own
    assert server_kind("nginx").lock_first_of(["nginx"]) is None
    assert THUNDER_LOCK.applies(1, 1) and not THUNDER_LOCK.applies(4, 1)  # with --threads: not this layout


REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
WORK_US = 6_000_000  # long enough for the look on a busy machine; the workers spin, then answer


def inspected_busy(server: UwsgiServer) -> InspectResult:
    """inspect of a 2-worker uWSGI while both workers are in the app's busy loop (a request each, held); then
    the server is ended at once (ended_at_once.py: its graceful stop would wait out the busy loop)."""
    clients = [socket.create_connection(server.address, timeout=30) for _ in range(2)]
    try:
        for client in clients:
            client.sendall(REQUEST)

        def calls() -> list[str]:
            return [thread_wait(pid, pid).call for pid in server.pids]

        wait_for(calls, lambda now: now == ["running"] * 2, 10, "both workers in the app's busy loop")
        return inspect(port=server.port)
    finally:
        for client in clients:
            client.close()
        end_at_once(server)


@pytest.mark.skipif(uwsgi_missing() is not None, reason=f"uWSGI launched runs: {uwsgi_missing()}")
@pytest.mark.parametrize(("mode", "reads"), [("thunder-lock", "accept-mutex"), ("default", "epoll-herd")])
def test_every_worker_running_reads_the_mode(mode: str, reads: str) -> None:
    """Both workers in the app's busy loop: no thread sleeps in the lock nor in epoll_wait. The thunder lock read
    epoll-herd before (2 of 2 workers taken for their epoll's waiters); the default mode reads the herd still."""
    spec = checked(ServerSpec(kind="uwsgi", mode=mode, workers=2, work_us=WORK_US))
    with UwsgiServer(spec) as server:
        result = inspected_busy(server)
    assert result.mechanism.name == reads, result.mechanism
    if reads == "accept-mutex":
        assert result.mechanism.modes == ("thunder-lock",)
        assert THUNDER_LOCK.why in result.mechanism.evidence
        takers = [unit for unit in result.units if unit.role == "lock"]
        assert len(takers) == 2 and all(u.on.startswith("running: takes the lock before it waits") for u in takers)
    else:
        assert THUNDER_LOCK.why not in result.mechanism.evidence
