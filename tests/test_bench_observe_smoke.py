"""The observe overhead benchmark runs end to end: one round of 0.5 s (no timing asserted: that is the
benchmark's to report). Without wrk or nginx it says so and prints the ratio as n/a. With --open, the server
holds what the benchmark's helper opened (ss's count, before and after the rounds) and observe's load
sampling saw every one of them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_observe_overhead.py"
OPEN = 300


def bench(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", "1", "--duration", "0.5", "--concurrency", "4", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"observed / alone: median (n/a|\d+\.\d{3} \(min)", proc.stdout), proc.stdout
    return proc.stdout


def test_bench_observe_overhead_runs() -> None:
    bench()


def test_bench_observe_overhead_holds_open_connections() -> None:
    out = bench("--open", str(OPEN), "--keepalive")
    if "median n/a" in out:
        return  # no nginx or wrk here: said so, nothing held
    assert f"held: {OPEN} connections established" in out, out
    assert f"held after the rounds: {OPEN} established" in out, out
    # the round's load sampling: its pace, its samples (at least the first and the last), the sockets held
    sampling = re.search(r"(\d+\.\d\d) s, (\d+), ([\d,]+); ", out)
    assert sampling is not None, out
    assert int(sampling.group(2)) >= 2, out
    assert int(sampling.group(3).replace(",", "")) >= OPEN, out
    assert f"{OPEN} connections held open, wrk keep-alive" in out, out
