"""reuseport-cpu (a classic BPF program) and incoming-cpu (SO_INCOMING_CPU) pick the listener by the CPU
a connection arrives on. Over loopback that is the client's CPU, so a client pinned to CPU i reaches worker
i, every time (what the kernel's reuseport_bpf_cpu and so_incoming_cpu selftests assert)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accept_order.core.cpus import allowed_cpus
from accept_order.servers.modes import MODES

CPUS = allowed_cpus()
pytestmark = [
    pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs to steer between"),
]
STEERED = ["reuseport-cpu", "incoming-cpu"]


@pytest.mark.parametrize("mode", STEERED)
@pytest.mark.parametrize("position", range(min(len(CPUS), 4)))
def test_a_client_pinned_to_cpu_i_reaches_worker_i(tmp_path: Path, position: int, mode: str) -> None:
    if MODES[mode].unavailable() is not None:
        pytest.skip(f"{mode}: {MODES[mode].unavailable()}")
    cpu = CPUS[position]
    out = tmp_path / "run.json"
    # The whole command is pinned (its workers too, inherited over fork): the client's CPU is the one that
    # matters, and the program returns the CPU number, the listener's index in the group.
    proc = subprocess.run(
        [sys.executable, "-m", "accept_order", "run", "-m", mode, "-w", str(max(CPUS) + 1), "-n", "12"]
        + ["--json", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    assert proc.returncode == 0, proc.stderr
    records = json.loads(out.read_text())["records"]
    assert [r["error"] for r in records] == [None] * 12
    assert [r["worker"] for r in records] == [cpu] * 12


@pytest.mark.parametrize("name", STEERED)
def test_the_mode_says_what_it_steers_by(name: str) -> None:
    mode = MODES[name]
    assert mode.queue == "per-worker" and mode.model == "cpu" and "CPU" in mode.why
