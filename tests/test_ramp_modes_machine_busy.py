"""ramp --modes: a verdict that one mode held a higher load says so where the other broke while other processes
held most of the machine.

tests/data/ramp_modes_busy_machine.json is a real `ramp --modes epoll,reuseport -w 2 --work 500us --rates
1000,2000,3000,4000 --step 1s` on this busy 2-CPU machine (load 2.6): reuseport broke at its first step, 1000/s
(finished 606/s), with other processes on 83% of the CPUs and the run's own workers and load generator on 17%, and
the verdict read 'epoll held a higher load than the others in this one run' without a word of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

from accept_order.experiments.ramp.machine_share import others_at_break
from accept_order.experiments.ramp.result import RampResult

REAL = Path(__file__).parent / "data" / "ramp_modes_busy_machine.json"


def _verdict(path: Path) -> str:
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    return next(line for line in result.stdout.splitlines() if line.startswith("Verdict:"))


def _reuseport(doc: dict[str, Any]) -> dict[str, Any]:
    return next(run for run in doc["rounds"][0] if run["server"]["mode"] == "reuseport")


def test_the_verdict_says_the_machine_held_most_of_the_cpus_where_the_other_broke() -> None:
    verdict = _verdict(REAL)
    assert verdict.startswith("Verdict: epoll held a higher load than the others in this one run"), verdict
    assert "but where reuseport broke other processes used 83% of the CPUs (this run's own 17%)" in verdict, verdict
    assert "may be the machine's, not the mode's" in verdict, verdict


def test_a_break_the_run_itself_used_most_of_the_cpus_at_is_not_put_down_to_the_machine(tmp_path: Path) -> None:
    doc = json.loads(REAL.read_text())
    _reuseport(doc)["steps"][0]["machine_cpu"] = 0.3  # others 13% beside the run's own 17%
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(doc))
    verdict = _verdict(path)
    assert "machine's" not in verdict and "other processes" not in verdict, verdict
    assert verdict == "Verdict: epoll held a higher load than the others in this one run (--repeat N tells how often)"


def test_the_shares_are_the_break_steps_own() -> None:
    doc = json.loads(REAL.read_text())
    run = RampResult.from_dict(_reuseport(doc))
    shares = others_at_break(run)
    assert shares is not None
    others, own = shares
    # own: the workers' CPU (0.142 + 0.1215) and the load generator's (115.5 µs x 926 finished over 1.53 s) of 2 CPUs
    assert round(own, 3) == round((0.142 + 0.1215 + 115.5e-6 * 926 / 1.527526) / 2, 3)
    assert round(others + own, 4) == 0.9976  # all CPUs' busy share over the step


def test_over_rounds_the_verdict_counts_the_runs_whose_losing_break_the_machine_held(tmp_path: Path) -> None:
    doc = json.loads(REAL.read_text())
    second = json.loads(json.dumps(doc["rounds"][0]))
    _reuseport({"rounds": [second]})["steps"][0]["machine_cpu"] = 0.3  # this round's break: the run's own CPUs
    doc["rounds"].append(second)
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(doc))
    verdict = _verdict(path)
    assert verdict.startswith("Verdict: epoll held a higher load than the others in 2/2 runs; in 1 of those runs a"), (
        verdict
    )
    assert "where other processes used more of the CPUs than the run itself" in verdict, verdict


def test_a_break_on_a_host_with_idle_cpus_is_not_put_down_to_the_machine(tmp_path: Path) -> None:
    # others 33% beside the run's own 17%, but half the CPUs idle: nothing kept the run from them
    doc = json.loads(REAL.read_text())
    _reuseport(doc)["steps"][0]["machine_cpu"] = 0.5
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(doc))
    verdict = _verdict(path)
    assert verdict == "Verdict: epoll held a higher load than the others in this one run (--repeat N tells how often)"
    assert others_at_break(RampResult.from_dict(_reuseport(doc))) is None


def test_a_break_whose_workers_were_on_a_cpu_throughout_is_the_runs(tmp_path: Path) -> None:
    # on an 8-CPU host two workers can hold 25% of it at most: both on a CPU the whole step (or one, the queue a hash
    # overloaded) were kept off none, whatever the others used
    doc = json.loads(REAL.read_text())
    for run in doc["rounds"][0]:
        run["environment"]["cpu_count"] = 8
    step = _reuseport(doc)["steps"][0]
    step["machine_cpu"] = 1.0
    for cpu, said in (((0.6, 0.5), True), ((1.0, 0.98), False), ((0.95, 0.1), False)):
        step["worker_cpu"] = list(cpu)
        path = tmp_path / "ramp.json"
        path.write_text(json.dumps(doc))
        assert ("may be the machine's" in _verdict(path)) is said, (cpu, _verdict(path))


def test_a_break_where_the_runs_cgroup_was_throttled_is_put_down_to_its_limit_not_the_machine(tmp_path: Path) -> None:
    # the same break in a container whose CPU limit (cpu.max) throttled the run's cgroup over the step: the run could
    # not take the CPUs however busy others kept them (tests/test_cgroup_throttle.py reads it from the kernel)
    doc = json.loads(REAL.read_text())
    step = _reuseport(doc)["steps"][0]
    step["throttled_ms"], step["cpu_limit"] = 640.0, "cpu.max 20000/100000"
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(doc))
    assert "other processes" not in _verdict(path)
    assert others_at_break(RampResult.from_dict(_reuseport(doc))) is None


def test_a_throttle_too_short_to_have_held_the_run_keeps_the_machine_s_share(tmp_path: Path) -> None:
    # 2 ms of throttle in the break step (a container's limit it barely touched) did not keep the run off the CPUs
    # others held 83% of: the break may still be the machine's, not put on the limit (core/cgroup_cpu.SHOWN_SHARE)
    doc = json.loads(REAL.read_text())
    step = _reuseport(doc)["steps"][0]
    step["throttled_ms"], step["cpu_limit"] = 2.0, "cpu.max 150000/100000"
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(doc))
    verdict = _verdict(path)
    assert "but where reuseport broke other processes used 83% of the CPUs (this run's own 17%)" in verdict, verdict
    assert others_at_break(RampResult.from_dict(_reuseport(doc))) is not None
