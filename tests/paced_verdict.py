"""A saved result whose load generator is made to set the pace, and the verdict `show` reads of it.

This busy 2-CPU machine gives no run whose load generator was on a CPU nearly all the time while the workers idled
(the driver at 42-70% of a CPU, 9938aab), so the pace tests set a golden file's drivers at 97% of a CPU, as such a
run's are. One copy for the latency --modes and --repeat tests (they were written twice). Imported by name, as
conftest's helpers are (tests/ is on sys.path; no test_ prefix, so pytest collects nothing here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli


def verdict(data: dict[str, Any], tmp_path: Path) -> str:
    """The Verdict line `show` gives of `data` saved as a file."""
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))
    lines = run_cli(["show", str(path)], columns=1000).stdout.splitlines()
    return next(line for line in lines if line.startswith("Verdict:"))


def pace(run: dict[str, Any]) -> None:
    """The load generator of `run` on a CPU 97% of its time (the workers' own CPU as it was: idle)."""
    for driver in run["drivers"]:
        driver["cpu_s"] = 0.97 * driver["wall_s"]
