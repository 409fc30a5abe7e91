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

from accept_order.experiments.ramp.repeated import higher_stability
from accept_order.experiments.repeat.result import RepeatResult

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


def test_ramp_modes_ranks_no_mode_whose_breaking_steps_the_generator_paced(tmp_path: Path) -> None:
    """ramp --modes: tests/data/ramp_modes_busy_machine.json ('epoll held a higher load than the others in this one
    run', epoll broke at 3000/s, reuseport at 1000/s), with each breaking step's own note that the load generator was
    CPU-bound while the workers idled (run.signals' words). One mode's break alone so paced still ranks."""
    data = json.loads((GOLDEN.parent / "ramp_modes_busy_machine.json").read_text())
    for row in data["rounds"]:
        for run in row:
            broke = next(step for step in run["steps"] if step.get("reasons"))
            broke["driver_cpu"] = 0.97
            broke["seen"].append(
                "load generator CPU-bound (97% of a CPU per process) while the workers idled: this step's figures are "
                "partly the client's"
            )
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(data))
    lines = run_cli(["show", str(path)], columns=1000).stdout.splitlines()
    said = next(line for line in lines if line.startswith("Verdict:"))
    assert said == (
        "Verdict: no mode ranked in this one run: the load generator set the pace of every mode's breaking step "
        "(CPU-bound while the workers idled: the steps' notes), so the loads they broke at are partly its own, not the "
        "servers' (give it more --driver-procs, or CPUs of its own with --load-cpus)"
    ), said
    rounds = RepeatResult.from_dict(data).rounds
    assert higher_stability(list(rounds) * 3).text == (  # as --repeat 3 would say it
        "no mode ranked: the load generator set the pace of every mode's breaking step in each of the 3 runs "
        "(CPU-bound while the workers idled: the steps' notes), so the loads they broke at are partly its own, not "
        "the servers' (give it more --driver-procs, or CPUs of its own with --load-cpus)"
    )
    next(step for step in data["rounds"][0][0]["steps"] if step.get("reasons"))["seen"].pop()  # epoll's own break
    path.write_text(json.dumps(data))
    lines = run_cli(["show", str(path)], columns=1000).stdout.splitlines()
    said = next(line for line in lines if line.startswith("Verdict:"))
    assert said.startswith("Verdict: epoll held a higher load than the others in this one run"), said
    mixed = higher_stability([*rounds, *RepeatResult.from_dict(data).rounds])
    assert mixed.text == (
        "inconclusive: epoll held a higher load than the others in 1/2 runs, none in 1; in 1 of the 2 runs the load "
        "generator set the pace of every mode's breaking step, so they rank none; try more --repeat"
    ), mixed.text
