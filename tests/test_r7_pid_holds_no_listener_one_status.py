"""A pid whose process serves nothing gets the same exit status from every command that takes one: observe and
inspect exited 1 ('holds no listening TCP socket') where run --attach and latency --attach of the same pid exited 2
('--attach: ... holds no listener on ...'), so a script could not tell a bad command line from a server that was
not there. Now 1 everywhere: what the machine turned out to be, as a pid no process has (test_h7_no_process_one_status).

The witness that the process holds no listener is its own fd table: no socket at all."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest
from conftest import assert_one_error_line, run_cli

COMMANDS = {
    "observe": lambda pid: ["observe", str(pid), "--duration", "1s"],
    "inspect": lambda pid: ["inspect", str(pid)],
    "run --attach": lambda pid: ["run", "--attach", str(pid), "--port", "80", "-n", "3"],
    "latency --attach": lambda pid: ["latency", "--attach", str(pid), "--port", "80", "-n", "3"],
}


@pytest.fixture
def idle() -> Iterator[int]:
    """A process of no sockets whose parent (a shell) holds none either and which has no children."""
    shell = subprocess.Popen(
        ["sh", "-c", "sleep 120 & echo $!; wait"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert shell.stdout is not None
    pid = int(shell.stdout.readline())
    try:
        yield pid
    finally:
        os.kill(pid, 9)  # the shell's child: it reaps it, then exits of itself (its wait ends)
        shell.wait(30)
        shell.stdout.close()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_pid_that_holds_no_listener_is_exit_1_everywhere(command: str, idle: int) -> None:
    fds = os.listdir(f"/proc/{idle}/fd")
    assert not any(os.readlink(f"/proc/{idle}/fd/{fd}").startswith("socket:") for fd in fds)
    assert_one_error_line(run_cli(COMMANDS[command](idle)), 1, str(idle), "no listen")
