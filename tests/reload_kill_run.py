"""A real `reload --how kill` of the blocking mode, the run the reload-stall tests read their fields from.

Worker 0 of 3 is killed at 150 ms of 300 (-c 32, 5 ms of work a connection): the survivors keep accepting from the
shared queue. One copy for the tests of what the run saves after the kill (they were written twice). Imported by
name, as conftest's helpers are (tests/ is on sys.path; no test_ prefix, so pytest collects nothing here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ARGS = ["-w", "3", "-c", "32", "--work", "5ms", "--duration", "300ms", "--modes", "blocking", "--how", "kill"]


def killed_blocking_run(tmp_path: Path) -> dict[str, Any]:
    """The one run of the saved file; skips where this host cannot make the private network namespace it needs."""
    out = tmp_path / "kill.json"
    proc = subprocess.run(
        [sys.executable, "-m", "accept_order", "reload", *ARGS, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0 and "cannot make a private network namespace" in proc.stderr:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(out.read_text())["runs"]
    assert isinstance(run, dict), run
    return run
