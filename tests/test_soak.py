"""The soak (benchmarks/soak.py) at a small size: commands ended by random signals at random moments, and
nothing of the tool's left afterwards (issue 16, section 5). The full size, 50 iterations, is run by hand
(benchmarks/README.md has its figures)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SOAK = Path(__file__).resolve().parents[1] / "benchmarks" / "soak.py"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper and /proc are Linux's")
def test_five_signalled_runs_leave_nothing_behind() -> None:
    # Seed 175's cases: serve --server haproxy SIGKILLed, serve --server nginx stopped by Ctrl-C, a hang-up of
    # a gunicorn sweep, SIGTERM to an nginx one, Ctrl-C twice to a whole group; none lands before the tool's
    # handlers exist.
    proc = subprocess.run(
        [sys.executable, str(SOAK), "--iterations", "5", "--seed", "175"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert len([line for line in lines if line[:3].strip().isdigit()]) == 5, proc.stdout
    assert any(line.startswith("left behind") and line.endswith(": none") for line in lines), proc.stdout


def test_bad_iterations_is_one_line() -> None:
    proc = subprocess.run([sys.executable, str(SOAK), "--iterations", "0"], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
