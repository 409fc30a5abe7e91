"""The suite gives what it starts SIGINT and SIGHUP as a terminal would (tests/conftest.py), even when it was
itself started with them ignored: under nohup, or as a background job of a script."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

IGNORED = (signal.SIGINT, signal.SIGHUP)


def _ignored_by(status: str) -> set[int]:
    mask = int(next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
    return {signum for signum in IGNORED if mask & (1 << (signum - 1))}


def test_a_command_started_by_a_test_takes_sigint_and_sighup() -> None:
    status = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True, check=True).stdout
    assert not _ignored_by(status), status


def _ignore() -> None:
    for signum in IGNORED:
        signal.signal(signum, signal.SIG_IGN)


def test_so_even_when_the_suite_was_started_ignoring_them() -> None:
    """As nohup and a script's background job start it."""
    here = Path(__file__)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         f"{here}::test_a_command_started_by_a_test_takes_sigint_and_sighup"],
        capture_output=True, text=True, timeout=120, cwd=here.parents[1], preexec_fn=_ignore,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
