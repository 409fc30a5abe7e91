"""What inspect and observe say about the target they are given (issue 27 §3, §4), with listeners held by
processes started here: pid 1 is init, not the server of an orphan it adopted; a process whose children
serve different ports is refused with their names; a pid no process can have is a usage error for both
commands, and one that does not exist an answer (exit 1) for both; a listener nobody's open files hold is
described as seen (as root: never "run as root"); `-p` is `--port` for inspect too."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import assert_one_error_line, gone, run_cli, wait_for

from accept_order.core.capabilities import PTRACE, holds
from accept_order.core.errors import NotServing
from accept_order.probes import proc_processes, serving

TIMEOUT_S = 20.0
LISTEN = "import socket, sys; s = socket.create_server(('127.0.0.1', 0)); print(s.getsockname()[1], flush=True)"
LISTENER = f"{LISTEN}; sys.stdin.read()"  # listens until its stdin closes
# forks a listener and exits: the listener is an orphan, adopted by init (or by a subreaper, if any)
ORPHAN = f"import os, sys\nif os.fork(): os._exit(0)\nimport socket\n{LISTEN}; print(os.getpid(), flush=True)\n"
ORPHAN += "sys.stdin.read()"
# starts N listeners as its children, prints their ports, and ends them when its own stdin closes
SUPERVISOR = f"""import subprocess, sys
kids = [subprocess.Popen([sys.executable, '-c', {LISTENER!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True) for _ in range(int(sys.argv[1]))]
print(*[k.stdout.readline().strip() for k in kids], flush=True)
sys.stdin.read()
for k in kids:
    k.stdin.close()
    k.wait()
"""


def started(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def ended(proc: subprocess.Popen[str]) -> None:
    """Close its stdin (it ends, and ends its children) and reap it; kill it if it does not."""
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def orphan() -> Iterator[tuple[int, int]]:
    """(pid, port) of a listener whose parent exited before it: its parent is now pid 1."""
    proc = started(ORPHAN)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    pid = int(proc.stdout.readline())
    proc.wait(TIMEOUT_S)  # the forking parent: it exited as soon as it forked
    try:
        parent = wait_for(
            lambda: proc_processes.process_info(pid), lambda info: info is not None, TIMEOUT_S, "the orphan"
        )
        if parent is None or parent.ppid != proc_processes.INIT:
            pytest.skip("orphans are adopted by a subreaper here, not by pid 1")
        yield pid, port
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the orphan shares the pipe: it ends at EOF
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wait_for(lambda: gone([pid]), bool, TIMEOUT_S, "the orphan's end")


@pytest.mark.skipif(os.geteuid() != 0, reason="pid 1's open files are root's to read")
@pytest.mark.parametrize("command", [["inspect", "1", "--samples", "1"], ["observe", "1", "--duration", "0.2s"]])
def test_pid_1_is_init_not_the_server_of_an_orphan_it_adopted(orphan: tuple[int, int], command: list[str]) -> None:
    pid, port = orphan
    try:
        if proc_processes.socket_inodes(1) & {row.inode for row in proc_processes.namespace_listeners(1)}:
            pytest.skip("pid 1 listens itself here (a server is this namespace's init)")
    except PermissionError:
        pass  # not readable even by root (a sandbox's init): the tool still says what pid 1 is, and who serves
    line = assert_one_error_line(run_cli(command), 1, "pid 1 (", "is init", "of its children")
    assert f"(pid {pid}) on port {port}" in line or " more: give the pid" in line, line  # (others' orphans)


@pytest.mark.parametrize("children", [1, 2])
def test_a_process_whose_children_serve_different_ports_is_no_one_server(children: int) -> None:
    """One listening child: it is the server of the pid given (a wrapper's). Two on different ports (a
    supervisor's): neither is, and the error names both."""
    proc = started(SUPERVISOR, str(children))
    try:
        assert proc.stdout is not None
        ports = [int(p) for p in proc.stdout.readline().split()]
        assert len(ports) == children
        if children == 1:
            server = serving.find_server(pid=proc.pid)
            assert [row.port for row in server.listeners] == ports and proc.pid not in server.holders
            return
        with pytest.raises(NotServing) as refused:
            serving.find_server(pid=proc.pid)
        said = str(refused.value)
        assert said.startswith(f"pid {proc.pid} (python") and "its children serve different ports" in said
        assert all(f"on port {port}" in said for port in ports), said
    finally:
        ended(proc)


@pytest.mark.parametrize("command", ["inspect", "observe"])
def test_one_rule_for_a_pid_in_both_commands(command: str) -> None:
    """No process can have 99999999999: a usage error (2). 4194304 is no process now (pids are below
    pid_max, at most 4194304): an answer about the machine (1)."""
    assert_one_error_line(run_cli([command, "99999999999"]), 2, "PID must be between 1 and 4194304")
    assert_one_error_line(run_cli([command, str(serving.PID_LIMIT)]), 1, f"no process {serving.PID_LIMIT}")


@pytest.mark.parametrize("command", ["inspect", "observe"])
def test_a_listener_no_process_holds_is_said_as_seen(command: str) -> None:
    """A listening socket in flight over a Unix socketpair, its sender's copy closed: no fd table holds it.
    As root every fd table was read, so the line says what it can be and never asks for root."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    inode = os.fstat(listener.fileno()).st_ino
    a, b = socket.socketpair()
    try:
        socket.send_fds(a, [b"x"], [listener.fileno()])
        listener.close()
        line = assert_one_error_line(
            run_cli([command, "-p", str(port)]), 1, f"a socket listens on 127.0.0.1:{port} (inode {inode})"
        )
        if holds(PTRACE):  # every fd table was read: what it can be, and never 'run as root'
            assert "no process's open files hold it" in line and "run as root" not in line
        elif os.geteuid() == 0:
            assert line.endswith("no process this user may look into holds it (this root lacks CAP_SYS_PTRACE)")
        else:
            assert line.endswith("no process this user may look into holds it (run as root)")
    finally:
        listener.close()
        a.close()
        b.close()


def test_a_listener_that_closes_while_looked_at_is_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def closed_first(inodes: object, pids: object = None, tables: object = None) -> dict[int, set[int]]:
        listener.close()  # the server stops between the listing and the look at who holds it
        return {}

    monkeypatch.setattr(serving, "socket_holders", closed_first)
    try:
        with pytest.raises(NotServing, match=rf"listened on 127.0.0.1:{port} .* had closed at a second look"):
            serving.find_server(port=port)
    finally:
        listener.close()


def test_inspect_takes_dash_p_as_observe_and_run_do() -> None:
    proc = started(LISTENER)
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()
        short, long = (run_cli(["inspect", flag, port, "--samples", "1"]) for flag in ("-p", "--port"))
        assert short.exit_code == 0, short.output
        assert short.stdout.splitlines()[0] == long.stdout.splitlines()[0]
        assert short.stdout.startswith(f"accept-order inspect port {port}: python")
    finally:
        ended(proc)
