"""cli_runs.ran_in_process stands for `accept-order ARGS` run as a process of its own (the subprocess.run of the
tests it replaced): what it reads is what that process prints off a terminal, byte for byte. With run_cli's fixed
width it read a 200-column terminal's report instead (tables laid out wider, prose wrapped), which no such process
printed."""

from __future__ import annotations

import os
import subprocess
import sys

from cli_runs import ran_in_process


def test_what_it_reads_is_what_the_command_prints_as_a_process() -> None:
    # `modes`: a table whose descriptions wrap at any width this side of 200, and nothing measured in it to differ
    off_a_terminal = {name: value for name, value in os.environ.items() if name != "COLUMNS"}
    process = subprocess.run(
        [sys.executable, "-m", "accept_order", "modes"],
        capture_output=True,
        text=True,
        timeout=120,
        env=off_a_terminal,
        check=False,
    )
    ran = ran_in_process("modes")
    assert ran.returncode == process.returncode == 0, (ran, process.stderr)
    assert ran.stdout == process.stdout
    assert ran.stderr == process.stderr == ""
