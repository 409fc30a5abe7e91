"""Seed 000's two nc experiments, run through experiments/nc_order.py as a user would run it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import run_experiment
from script_in_process import run_script_in_process

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll")


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return run_experiment("nc_order.py", *args)


def orders(stdout: str) -> dict[str, list[int]]:
    """Experiment name -> the worker printed per connection (the lines that are just a number)."""
    found: dict[str, list[int]] = {}
    current = None
    for line in stdout.splitlines():
        if line.startswith(("blocking-accept:", "epoll-and-accept:")):
            current = line.split(":")[0]
            found[current] = []
        elif current is not None and line.strip().isdigit():
            found[current].append(int(line))
    return found


@LINUX_ONLY
def test_reproduces_both_seed_orders() -> None:
    proc = run_script("--workers", "3", "--connections", "6")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = orders(proc.stdout)
    assert set(seen) == {"blocking-accept", "epoll-and-accept"}
    blocking, epoll = seen["blocking-accept"], seen["epoll-and-accept"]
    # Blocking accept: a FIFO rotation, every 3 consecutive connections served by 3 different workers.
    # Where it starts depends on which worker first reached accept(), so only the rotation is asserted.
    assert len(blocking) == 6
    assert all(len(set(blocking[i : i + 3])) == 3 for i in range(4)), blocking
    # EPOLLEXCLUSIVE: the first-registered worker (0) takes every connection while it is idle.
    assert epoll == [0] * 6
    assert proc.stdout.count("Same ") == 2  # one comparison sentence per experiment, both matching


@LINUX_ONLY
def test_one_experiment_with_other_sizes() -> None:
    proc = run_script("--only", "blocking-accept", "--workers", "2", "--connections", "5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = orders(proc.stdout)
    assert list(seen) == ["blocking-accept"]
    order = seen["blocking-accept"]
    assert len(order) == 5 and all(a != b for a, b in zip(order, order[1:], strict=False)), order
    assert "seed printed 2 1 0 2 1 0" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "0"], "must be at least 1"),
        (["--connections", "many"], "is not an integer"),
        (["--only", "nope"], "invalid choice"),
    ],
)
def test_bad_arguments_are_one_line(args: list[str], message: str) -> None:
    proc = run_script_in_process("nc_order.py", *args)  # refused before it starts anything
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert proc.stdout == ""
