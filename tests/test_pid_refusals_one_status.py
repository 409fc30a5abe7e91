"""A pid every command that takes one refuses gets the same exit status from each of them, so a script can tell a bad
command line (2) from a server that was not there (1). The rule is observe's and inspect's (probes/serving.check_pid):
a number no process can have is a usage error (2); what the machine turned out to be is an answer about it (1), as
an address nobody listens on is for run --target and latency --target.

No process: observe 999999 exited 1 ('no process 999999') where latency --attach 999999 exited 2 ('--attach: no
process 999999'). The witness that the pid is absent is /proc itself, not the tool.

A process that serves nothing: observe and inspect exited 1 ('holds no listening TCP socket') where run --attach and
latency --attach of the same pid exited 2 ('--attach: ... holds no listener on ...'). The witness that the process
holds no listener is its own fd table: no socket at all."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest
from conftest import assert_one_error_line, run_cli
from waiting import wait_for

from accept_order.probes.serving import PID_LIMIT

ABSENT = PID_LIMIT  # the largest pid_max allows pids below it only: no process has it, ever
IMPOSSIBLE = PID_LIMIT + 1

COMMANDS = {
    "observe": lambda pid: ["observe", str(pid), "--duration", "1s"],
    "inspect": lambda pid: ["inspect", str(pid)],
    "run --attach": lambda pid: ["run", "--attach", str(pid), "--port", "80", "-n", "3"],
    "latency --attach": lambda pid: ["latency", "--attach", str(pid), "--port", "80", "-n", "3"],
}


def _program(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


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
        # $! is the forked shell until it has exec'd sleep, holding the shell's own descriptors meanwhile (the
        # fresh-clone CI read one of them as it closed: FileNotFoundError on /proc/PID/fd/3)
        wait_for(lambda: _program(pid), lambda name: name == "sleep", 30, f"pid {pid} to become sleep")
        yield pid
    finally:
        os.kill(pid, 9)  # the shell's child: it reaps it, then exits of itself (its wait ends)
        shell.wait(30)
        shell.stdout.close()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_pid_no_process_has_is_exit_1_everywhere(command: str) -> None:
    assert not os.path.exists(f"/proc/{ABSENT}")
    assert_one_error_line(run_cli(COMMANDS[command](ABSENT)), 1, f"no process {ABSENT}")


@pytest.mark.parametrize("command", ["run --attach", "latency --attach"])
def test_a_pid_none_can_have_stays_a_usage_error(command: str) -> None:
    assert_one_error_line(run_cli(COMMANDS[command](IMPOSSIBLE)), 2, f"no process {IMPOSSIBLE}")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_pid_that_holds_no_listener_is_exit_1_everywhere(command: str, idle: int) -> None:
    fds = os.listdir(f"/proc/{idle}/fd")
    assert not any(os.readlink(f"/proc/{idle}/fd/{fd}").startswith("socket:") for fd in fds)
    assert_one_error_line(run_cli(COMMANDS[command](idle)), 1, str(idle), "no listen")
