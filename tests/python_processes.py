"""Python scripts run as processes of their own for a test (a worker asleep in a call, a spinner on one CPU), each
killed, reaped and its pipes closed when the test's block ends, and by the kernel too if pytest is killed, even by
SIGKILL (cluster.dies_with).

One copy for the tests that each started such processes by hand and wrote out the same teardown (the busy-time
model's waiters, the CPU waits' spinners, the attached epolls' sleepers). Imported by name, as conftest's helpers
are (tests/ is on sys.path; no test_ prefix, so pytest collects nothing here)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from cluster import dies_with

END_TIMEOUT_S = 10.0


@contextmanager
def pythons(*commands: Sequence[str], pass_fds: Sequence[int] = ()) -> Iterator[list[subprocess.Popen[str]]]:
    """`python -c SCRIPT ARGS...` for each of `commands` (SCRIPT first), its stdin and stdout text pipes, in order,
    until the block ends; `pass_fds`: descriptors each inherits (a listener the test's workers share)."""
    procs: list[subprocess.Popen[str]] = []
    try:
        for command in commands:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", *command],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    pass_fds=pass_fds,
                    preexec_fn=dies_with(os.getpid()),
                )
            )
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(END_TIMEOUT_S)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
