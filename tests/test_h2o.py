"""h2o (Debian's 2.2) as a server the tool launches: its threads are the workers, every idle thread is woken for
every connection (each thread's own epoll watches the one listener without EPOLLEXCLUSIVE), one thread
serves alone, and a missing h2o or a busy port is one line. That its access log agrees with the tool
(thread id and client port, in order) and that it leaves nothing, run or SIGKILLed: the contract every
launched kind keeps (test_kind_contract.py)."""

from __future__ import annotations

import socket

import psutil
import pytest
from conftest import assert_one_error_line, child_processes, http_fetch, run_cli, wait_for

from accept_order.core.processes import usage
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.probes.fd_table import open_files
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.proc_waits import thread_wait
from accept_order.servers.launched import h2o
from accept_order.servers.launched.h2o import H2oServer, h2o_missing
from accept_order.servers.registry import checked
from accept_order.servers.watched import proc_state

if h2o_missing():
    pytest.skip(f"h2o launched runs: {h2o_missing()}", allow_module_level=True)

CONNECTIONS = 12


def launched(workers: int = 3) -> H2oServer:
    return H2oServer(checked(ServerSpec(kind="h2o", mode="threads", workers=workers)))


def test_every_idle_thread_is_woken_for_each_connection() -> None:
    """The workers are threads of one process, each in epoll_wait on an epoll of its own that watches the
    one listener without EPOLLEXCLUSIVE: each connection wakes every idle thread, winner or not."""
    with launched() as server:
        assert server.master is not None
        (listener,) = listening_sockets(server.port)

        # no worker processes (h2o's one child is its crash handler, a perl script waiting on a pipe; it is
        # named h2o between its fork and its exec, which a busy machine can show)
        def children() -> list[str]:
            return sorted(p.name() for p in child_processes(server.master.pid))

        wait_for(children, lambda names: set(names) <= {"perl"}, 5.0, "h2o's only child to be its perl crash handler")
        # what must be absent is read with psutil: the kernel's lists may skip a child while another is reaped
        assert {p.name() for p in psutil.Process(server.master.pid).children()} <= {"perl"}
        epolls = {fd: f for fd, f in open_files(server.master.pid).items() if f.kind == "eventpoll"}
        used = [thread_wait(server.master.pid, tid).fd for tid in server.pids]
        assert len(set(used)) == len(server.pids)  # an epoll each
        for fd in used:
            assert [w.exclusive for w in epolls[fd].watches if w.inode == listener.inode] == [False]
        before = {tid: usage(tid)[0] for tid in server.pids}
        seen = []
        pid = server.master.pid

        def all_in_their_epolls() -> bool:
            # Asleep (S) is not enough on a loaded machine: a thread asleep elsewhere (a lock, its log
            # writer) when the connection comes is woken later, by the epoll's ready list, not by the herd.
            return all(proc_state(t) == "S" and thread_wait(pid, t).call == "epoll_wait" for t in server.pids)

        settled = (all_in_their_epolls, bool, 5.0, "every thread asleep in its epoll_wait")
        for _ in range(CONNECTIONS):
            wait_for(*settled)
            seen.append(http_fetch(server.address))
        wait_for(*settled)
        woken = {tid: usage(tid)[0] - before[tid] for tid in server.pids}
    assert all(n >= CONNECTIONS for n in woken.values()), woken
    assert server.witness() == {"source": "h2o access log", "requests": [list(row) for row in seen]}


def test_one_thread() -> None:
    result = session.run_sequential(ServerSpec(kind="h2o", mode="threads", workers=1), SequentialLoad(connections=3))
    assert result.served == 3 and {r.worker for r in result.records} == {0}


def test_accept_batch_is_refused() -> None:
    result = run_cli(["run", "--server", "h2o", "--accept-batch", "4", "-n", "3"])
    assert_one_error_line(result, 2, "--accept-batch does not apply to h2o")


def test_a_missing_h2o_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(h2o.shutil, "which", lambda name: None)
    assert h2o_missing() == "h2o is not installed here: apt-get install h2o"


def test_port_in_use_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import accept_order.servers.modes.reuseport as reuseport

    monkeypatch.setattr(reuseport, "refuse_foreign_group", lambda *args: None)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli(["run", "--server", "h2o", "--port", str(port), "-n", "3"])
    assert_one_error_line(result, 1, "h2o exited with status")
    assert not psutil.Process().children(recursive=True)
