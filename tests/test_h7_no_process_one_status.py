"""A pid that no process has now is the same answer, with the same exit status, from every command that takes one:
observe 999999 exited 1 ('no process 999999') where latency --attach 999999 exited 2 ('--attach: no process
999999'). The rule is observe's and inspect's (probes/serving.check_pid): a number no process can have is a usage
error (2); one that merely is not running now is an answer about the machine (1), as an address nobody listens on
is for run --target and latency --target.

The witness that the pid is absent is /proc itself, not the tool."""

from __future__ import annotations

import os

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.probes.serving import PID_LIMIT

ABSENT = PID_LIMIT  # the largest pid_max allows pids below it only: no process has it, ever
IMPOSSIBLE = PID_LIMIT + 1

COMMANDS = {
    "observe": lambda pid: ["observe", str(pid), "--duration", "1s"],
    "inspect": lambda pid: ["inspect", str(pid)],
    "run --attach": lambda pid: ["run", "--attach", str(pid), "--port", "80"],
    "latency --attach": lambda pid: ["latency", "--attach", str(pid), "--port", "80"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_pid_no_process_has_is_exit_1_everywhere(command: str) -> None:
    assert not os.path.exists(f"/proc/{ABSENT}")
    assert_one_error_line(run_cli(COMMANDS[command](ABSENT)), 1, f"no process {ABSENT}")


@pytest.mark.parametrize("command", ["run --attach", "latency --attach"])
def test_a_pid_none_can_have_stays_a_usage_error(command: str) -> None:
    assert_one_error_line(run_cli(COMMANDS[command](IMPOSSIBLE)), 2, f"no process {IMPOSSIBLE}")
