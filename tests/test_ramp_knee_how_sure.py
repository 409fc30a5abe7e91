"""One ramp's knee said where the load broke and not how sure that is: 'ramp --rates 2000,8000 --step 1s' read 'Knee:
the last step that held was 2000/s; the first that did not was 8000/s: ...', one run on a busy machine, whose knee
lies anywhere between the two steps. The line now says so, and that --repeat counts how often it does; so does a ramp
whose every step held."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def _said(tmp_path: Path, reasons: list[list[str]], **second: Any) -> str:
    data: dict[str, Any] = json.loads(GOLDEN.joinpath("ramp.json").read_text())  # 50/s and 100/s, both held
    for step, why in zip(data["steps"], reasons, strict=True):
        step["reasons"] = why
        step["machine_cpu"] = 0.4  # the golden file's host was 99% busy, others' nearly all: not here
    data["steps"][1].update(second)
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(data))
    result = run_cli(["show", str(path)], columns=2000)
    assert result.exit_code == 0, result.output
    return next(line for line in result.stdout.splitlines() if line.startswith(("Knee", "Every step")))


def test_the_knee_says_it_lies_between_two_steps_of_one_run(tmp_path: Path) -> None:
    line = _said(tmp_path, [[], ["p99 12.0 ms over the 10 ms bound"]])
    assert line.endswith(
        "How sure: one run, to the steps' spacing: it lies between 50/s and 100/s; --repeat 3 says how often it does"
    ), line


def test_no_step_held_bounds_it_from_above(tmp_path: Path) -> None:
    line = _said(tmp_path, [["p99 40.0 ms over the 10 ms bound"], ["p99 12.0 ms over the 10 ms bound"]])
    assert line.startswith("Knee: no step held; the first that did not was 50/s")
    assert line.endswith("it lies at or below 50/s; --repeat 3 says how often it does"), line


def test_every_step_held_is_one_run_too(tmp_path: Path) -> None:
    line = _said(tmp_path, [[], []])
    assert line == (
        "Every step held, up to 100/s: the breaking point is further out. How sure: one run; --repeat 3 says how "
        "often every step holds"
    ), line


def test_a_knee_where_the_load_generator_set_the_pace_says_so(tmp_path: Path) -> None:
    """The step that did not hold says the load generator was CPU-bound while the workers idled (step_verdict's
    CLIENT_PACED): its break is the generator's as much as the server's, which ramp --modes ranks no mode on."""
    paced = "load generator CPU-bound (99% of a CPU per process) while the workers idled: this step's figures are ..."
    line = _said(tmp_path, [[], ["finished 60/s of 100/s offered"]], seen=[paced])
    assert line.endswith(
        "it lies between 50/s and 100/s, where the load generator set the pace (There): the server's own may lie "
        "further out; --repeat 3 says how often it does"
    ), line


def test_a_knee_where_other_processes_held_the_machine_says_so(tmp_path: Path) -> None:
    """'ramp --rates 2000,40000 --step 1s --driver-procs 1 -w 4' (load 3.2, Linux 6.18, 2 vCPUs) broke at 40000/s
    with other processes using 52% of the CPUs and the run 45% (its workers on a CPU 23% of the step), and its knee
    read 'it lies between 2000/s and 40000/s' as the server's, where ramp --modes says such a break may be the
    machine's. Here the golden file's own 100/s step: the host 99% busy, its workers 1% of a CPU."""
    line = _said(tmp_path, [[], ["finished 60/s of 100/s offered"]], machine_cpu=0.9942)
    assert line.endswith(
        "it lies between 50/s and 100/s, where other processes used 99% of the CPUs (this run's own 1%): that break "
        "may be the machine's, not the server's; --repeat 3 says how often it does"
    ), line
