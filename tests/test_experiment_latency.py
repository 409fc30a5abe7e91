"""The seed-000 latency experiment script runs end to end with tiny settings and states its finding."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_experiment
from script_in_process import run_script_in_process

from accept_order.servers.modes import MODES

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    # 120 columns, as piped: the mmhistogram summary lines whole (a narrower terminal folds a long one)
    return run_experiment("latency_shared_vs_reuseport.py", *args, columns=120)


@LINUX_ONLY
def test_reproduces_the_comparison_and_states_whether_the_finding_holds(tmp_path: Path) -> None:
    path = tmp_path / "exp.json"
    proc = run_script(
        "--connections", "300", "--concurrency", "8", "--work-us", "200", "--workers", "2", "--json", str(path)
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    titles = re.findall(r"^Duration in ms \(([\w-]+)\) min:.* count:300$", out, re.M)
    # By default every mode that wakes one worker per connection (no herd), in the registry's order.
    no_herd = [name for name, mode in MODES.items() if not mode.herds and mode.unavailable() is None]
    assert titles == no_herd
    assert "latency by mode (ms)" in out and "Verdict: " in out
    finding = r"^Seed 000's finding \(similar average, much wider spread with reuseport\) "
    statement = re.search(finding + r"(holds|does not hold) here:$", out, re.M)
    assert statement, out
    per_mode = re.findall(r"^  (holds|does not hold) against ([\w-]+): reuseport's average is", out, re.M)
    assert [m for _, m in per_mode] == [m for m in no_herd if MODES[m].queue == "shared"]
    # The overall statement is the conjunction of the per-mode ones.
    assert (statement[1] == "holds") == all(v == "holds" for v, _ in per_mode)
    doc = json.loads(path.read_text())
    assert doc["kind"] == "latency-compare" and [r["server"]["mode"] for r in doc["runs"]] == titles
    for run in doc["runs"]:
        # the cap where the mode reads it; a mode without one saves the default it ran with (87222a4)
        cap = 1 if MODES[run["server"]["mode"]].batches else 0
        assert run["server"]["accept_batch"] == cap and run["summary"]["count"] == 300 and run["errors"] == {}


@LINUX_ONLY
def test_chosen_modes_and_the_old_requests_option() -> None:
    proc = run_script("--modes", "epoll,reuseport", "--requests", "100", "--concurrency", "4", "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    titles = re.findall(r"^Duration in ms \(([\w-]+)\) min:.* count:100$", proc.stdout, re.M)
    assert titles == ["epoll", "reuseport"]
    per_mode = re.findall(r"^  (holds|does not hold) against ([\w-]+): reuseport's average is", proc.stdout, re.M)
    assert [m for _, m in per_mode] == ["epoll"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--modes", "nope"], "unknown mode(s): nope"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--concurrency", "0"], "--concurrency must be between 1"),
        (["--connections", "x"], "invalid int value"),
        (["--requests", "x"], "invalid int value"),
    ],
)
def test_bad_arguments_are_one_line(args: list[str], message: str) -> None:
    proc = run_script_in_process("latency_shared_vs_reuseport.py", *args)  # refused before it starts anything
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
