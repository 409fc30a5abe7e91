"""The seed-004 experiment script runs end to end with small numbers and prints both tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_experiment
from script_in_process import run_script_in_process

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return run_experiment("herd.py", *args, columns=220)


@LINUX_ONLY
def test_reproduces_herd_versus_no_herd(tmp_path: Path) -> None:
    path = tmp_path / "exp.json"
    proc = run_script(
        "--workers", "3", "--connections", "8", "--clients", "30",
        "--modes", "epoll-herd,epoll,reuseport", "--json", str(path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Table 1" in out and "Table 2" in out
    assert "ngx-no (herd)" in out and "ngx-NGX_EXCLUSIVE_EVENT" in out and "ngx-reuseport" in out
    doc = json.loads(path.read_text())
    runs = {r["server"]["mode"]: r for r in doc["herd"]["runs"]}
    assert set(runs) == {"epoll-herd", "epoll", "reuseport"}
    woken = {m: r["verdict"]["woken_per_connection"] for m, r in runs.items()}
    # 3 idle workers: the herd wakes all of them, EPOLLEXCLUSIVE and reuseport one.
    assert woken["epoll-herd"] >= 1.5, woken
    assert woken["epoll"] < 1.5 and woken["reuseport"] < 1.5, woken
    assert len(doc["burst"]) == 3
    for row in doc["burst"]:
        assert row["clients"] == 30 and row["served"] + row["failed"] == 30


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--modes", "nope"], "unknown mode(s): nope"),
        (["--modes", ","], "unknown mode(s): (none given)"),
        (["--workers", "0"], "must be at least 1"),
        (["--clients", "10,x"], "not a comma-separated list"),
    ],
)
def test_bad_arguments_are_one_line(args: list[str], message: str) -> None:
    proc = run_script_in_process("herd.py", *args)  # refused before it starts anything
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
