"""The inspect benchmark runs end to end (no timing asserted: that is the benchmark's to report): nginx with
2 workers holding a few connections, one round, this checkout beside itself, whose reports and result files
must then be the same byte for byte."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_inspect.py"
OPEN = 30


def test_bench_inspect_runs_and_compares() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--workers", "2", "--open", f"0,{OPEN}", "--rounds", "1"]
        + ["--baseline", str(ROOT / "src")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    if "nginx is not installed" in proc.stdout:
        return
    for held in ("0", str(OPEN)):
        assert f"nginx 2 workers, {held} held connections, inspect by port, 1 rounds:" in proc.stdout, proc.stdout
    assert proc.stdout.count("reports and result files: identical in every round") == 2, proc.stdout
    readlinks = [float(n) for n in re.findall(r"readlinks (\d+\.\d+)", proc.stdout)]
    assert len(readlinks) == 4 and all(n > 0 for n in readlinks), proc.stdout
