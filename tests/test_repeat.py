"""--repeat: the variants run in interleaved rounds (A B A B), every figure is reported with its range, and
the verdict says how many runs agree; a kernel-guaranteed order agrees in every run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from accept_order.analysis.stability import Spread
from accept_order.experiments.repeat.result import machine_warnings
from accept_order.experiments.repeat.run import interleaved

CLI = [sys.executable, "-m", "accept_order"]
WIDE = {**os.environ, "COLUMNS": "200"}  # a verdict on one line


def test_rounds_interleave_the_variants() -> None:
    order: list[str] = []
    rounds = interleaved(["A", "B"], 3, lambda v: order.append(v) or v)
    assert order == ["A", "B", "A", "B", "A", "B"] and rounds == [["A", "B"]] * 3


def test_spread_is_median_and_range() -> None:
    s = Spread.of([3.0, 1.0, 2.0, 10.0])
    assert (s.median, s.low, s.high) == (2.5, 1.0, 10.0)


def test_a_kernel_order_agrees_in_every_run(tmp_path: Path) -> None:
    out = tmp_path / "rep.json"
    proc = subprocess.run(
        [*CLI, "compare", "--modes", "blocking,epoll", "-n", "6", "--repeat", "3", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=WIDE,
    )
    assert proc.returncode == 0, proc.stderr
    assert "rotation (FIFO among idle workers) in 3/3 runs" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["kind"] == "repeat" and doc["of"] == "compare" and len(doc["rounds"]) == 3
    assert [[r["server"]["mode"] for r in row] for row in doc["rounds"]] == [["blocking", "epoll"]] * 3
    assert "load_average" in doc["machine"]["before"]
    shown = subprocess.run([*CLI, "show", str(out)], capture_output=True, text=True, timeout=60, env=WIDE)
    assert shown.returncode == 0 and "in 3/3 runs" in shown.stdout


def test_latency_repeat_reports_medians_and_a_verdict_that_counts_runs(tmp_path: Path) -> None:
    out = tmp_path / "rep.json"
    proc = subprocess.run(
        [*CLI, "latency", "--modes", "blocking,reuseport", "-n", "300", "-c", "4", "-w", "2", "--repeat", "2"]
        + ["--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=WIDE,
    )
    assert proc.returncode == 0, proc.stderr
    assert "median (min-max) over the runs" in proc.stdout
    verdict = next(line for line in proc.stdout.splitlines() if line.startswith("Verdict: "))
    assert "/2 runs" in verdict or "no clear difference" in verdict
    assert "samples: its p99.9 is one of its slowest few" in proc.stdout  # 300 samples is too few for p99.9
    doc = json.loads(out.read_text())
    assert doc["of"] == "latency-compare" and all(len(row) == 2 for row in doc["rounds"])


def test_machine_warnings_say_when_the_machine_moved() -> None:
    before = {"load_average": [3.0, 0.5, 0.5], "cpu_jiffies": {"total": 1000, "steal": 0}}
    after = {"load_average": [5.0, 1.0, 0.6], "cpu_jiffies": {"total": 2000, "steal": 100}}
    notes = machine_warnings(before, after, 4)
    assert any("already busy: load average 3.0 on 4 CPUs" in n for n in notes)
    assert any("10% of the CPUs" in n for n in notes)
    quiet = {"load_average": [0.2, 0.2, 0.2], "cpu_jiffies": {"total": 1000, "steal": 0}}
    assert machine_warnings(quiet, after | {"cpu_jiffies": {"total": 2000, "steal": 1}}, 4) == []


def test_run_and_herd_repeat_too(tmp_path: Path) -> None:
    for args in (["run", "-m", "blocking", "-n", "6"], ["herd", "--modes", "epoll", "-w", "2", "-n", "6"]):
        out = tmp_path / f"{args[0]}.json"
        proc = subprocess.run(
            [*CLI, *args, "--repeat", "2", "--json", str(out)], capture_output=True, text=True, timeout=120, env=WIDE
        )
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(out.read_text())
        assert doc["of"] == args[0] and len(doc["rounds"]) == 2 and "in 2/2 runs" in proc.stdout


def test_a_repeated_result_draws(tmp_path: Path) -> None:
    import pytest

    pytest.importorskip("matplotlib")
    out = tmp_path / "rep.json"
    args = ["compare", "--modes", "blocking,epoll", "-n", "6", "--repeat", "2", "--json", str(out)]
    assert subprocess.run([*CLI, *args], capture_output=True, timeout=120).returncode == 0
    png = tmp_path / "rep.png"
    proc = subprocess.run([*CLI, "plot", str(out), "-o", str(png)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    from matplotlib.image import imread

    assert imread(png).shape[1] >= 400


def test_sweep_repeats_each_accept_batch_as_its_own_variant(tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    args = ["sweep", "--accept-batch", "1,0", "-n", "300", "-c", "4", "-w", "2", "--repeat", "2", "--json", str(out)]
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, env=WIDE)
    assert proc.returncode == 0, proc.stderr
    assert "accept-batch 1" in proc.stdout and "accept-batch none" in proc.stdout
    doc = json.loads(out.read_text())
    assert [[r["server"]["accept_batch"] for r in row] for row in doc["rounds"]] == [[1, 0], [1, 0]]
