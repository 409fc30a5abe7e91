"""The observe overhead benchmark runs end to end: one round of 0.5 s (no timing asserted: that is the
benchmark's to report). Without wrk or nginx it says so and prints the ratio as n/a."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_observe_overhead.py"


def test_bench_observe_overhead_runs() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", "1", "--duration", "0.5", "--concurrency", "4"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"observed / alone: median (n/a|\d+\.\d{3} \(min)", proc.stdout), proc.stdout
