"""The nginx load benchmark runs end to end (no timing asserted: that is the benchmark's to report)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_nginx_load.py"


def test_bench_nginx_load_runs() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", "1", "--duration", "1", "--concurrency", "4"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ratio n/a" in proc.stdout or "ours / wrk: median" in proc.stdout, proc.stdout
    rows = [line.split() for line in proc.stdout.splitlines() if line.split()[:1] == ["1"]]
    if "ratio n/a" not in proc.stdout:  # both clients measured something in the round
        assert rows and float(rows[0][1]) > 0 and float(rows[0][2]) > 0, proc.stdout
