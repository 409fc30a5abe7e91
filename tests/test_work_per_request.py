"""--work is spun before each answer, so once per request: over a kept connection (--requests-per-connection K)
before every one of its K replies (servers/keepalive.py; a launched server's handler runs per request alike).
Every command's help said 'How long a worker spins per connection', which a user choosing K read as K requests
for one spin. The help now says per request; a real latency run over kept connections is its witness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

# the commands whose load can carry several requests over one connection, where the two readings part
KEPT = ["latency", "sweep", "ramp", "burst"]


@pytest.mark.parametrize("command", KEPT)
def test_the_help_says_the_work_is_per_request(command: str) -> None:
    result = run_cli([command, "--help"], columns=2000)
    assert result.exit_code == 0, result.output
    words = " ".join(result.stdout.split())
    work = words.split("--work DURATION")[1].split("--work-iters")[0]
    iters = words.split("--work-iters INTEGER RANGE")[1].split("--backlog")[0]
    assert "spins per request before it answers it" in work and "per connection" not in work, work
    assert "counts per request" in iters and "per connection" not in iters, iters


def test_every_request_of_a_kept_connection_waits_out_the_work(tmp_path: Path) -> None:
    """2 connections of 4 requests each, 20 ms of work: every one of the 8 requests took at least the 20 ms the
    worker spun by the wall clock before answering it (a spin per connection leaves 6 of them without)."""
    out = tmp_path / "kept.json"
    args = ["latency", "-w", "1", "-n", "8", "-c", "1", "--requests-per-connection", "4", "--work", "20ms"]
    result = run_cli([*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    run = json.loads(out.read_text())
    assert run["summary"]["count"] == 8, run["summary"]
    latencies = [us for us, count in run["histogram"]["counts"] for _ in range(count)]
    assert len(latencies) == 8 and min(latencies) >= 20_000, latencies
