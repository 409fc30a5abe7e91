"""latency --modes and sweep rank no run where the load generator set the pace of every run, as burst --repeat
(tests/test_burst_repeat_paced.py), in the same words (experiments/generator_pace.py).

Their reports already warned ('the load generator was on a CPU 97% of the time while the workers used 38% of the 1
CPUs they may run on: the server waited for its client, so these figures are partly the client's'), yet the verdict
below named 'epoll had the tightest tail of these runs' or 'Pick no limit'. This busy 2-CPU machine (others at 30-75%
of its CPUs) gave no client-bound run to save, so the golden files' drivers are set at 97% of a CPU here, as such a
run's are; without that the goldens' verdicts stand (tests/test_golden.py)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"
PACED = (
    "the load generator set the pace of every {runs} (on a CPU nearly all the time while the workers idled: the "
    "warning above), so their latencies are partly its own, not the servers' (give it more --driver-procs, or CPUs of "
    "its own with --load-cpus); on the figures, "
)


def paced_verdict(name: str, tmp_path: Path) -> str:
    """The verdict of golden `name` with every driver on a CPU 97% of its time."""
    data = json.loads((GOLDEN / name).read_text())
    for run in data["runs"]:
        for driver in run["drivers"]:
            driver["cpu_s"] = 0.97 * driver["wall_s"]
    path = tmp_path / name
    path.write_text(json.dumps(data))
    lines = run_cli(["show", str(path)], columns=1000).stdout.splitlines()
    assert any("the server waited for its client" in line for line in lines)  # the warning the verdict names
    return next(line for line in lines if line.startswith("Verdict:"))


def test_latency_modes_ranks_no_mode_where_the_generator_set_every_pace(tmp_path: Path) -> None:
    said = paced_verdict("latency-compare.json", tmp_path)
    assert said.startswith(
        "Verdict: no mode ranked: " + PACED.format(runs="run") + "blocking had the tightest tail of these runs: "
    ), said
    assert "How sure: one run each; --repeat 5 says whether that holds from run to run" in said, said


def test_sweep_picks_no_cap_where_the_generator_set_every_pace(tmp_path: Path) -> None:
    said = paced_verdict("sweep.json", tmp_path)
    assert "Pick" not in said, said
    assert said.startswith(
        "Verdict: No cap to pick: " + PACED.format(runs="cap's run") + "no limit led: its tail is tighter than every "
    ), said
