"""latency --modes: a verdict between runs that had the machine unlike says so.

A real 'latency --modes epoll,reuseport -w 2 -c 32 --duration 5s' here, with other processes taking more of the CPUs
during the second run (79% during epoll, 88% during reuseport; the host's CPUs 100% busy throughout), read 'Verdict:
epoll had the tightest tail of these runs ... p99 (20.23 vs 59.62 ms, 0.34x) ... apart beyond their own samples',
where reuseport's run had 12% of the CPUs to itself against epoll's 21% and served 3,391/s against 6,568/s. The same
readings are set here on the golden comparison (blocking, reuseport): the host's ticks and the workers' CPU, and the
load generator's wait for a CPU, which must be longer in the run with the smaller share: 'latency --modes
epoll,accept-mutex -w 2 -c 32 --work 1ms' left the runs 81% and 53% by the mutex's own doing (its load generator
waited 8% of its time in each) and was said to have had the machine unlike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli
from verdict_shown import GOLDEN, verdict_shown


def _waits(run: dict[str, Any], waited: float | None) -> None:
    """The run's load generator waited for a CPU `waited` of its time (None: not known, as an older file)."""
    for driver in run["drivers"]:
        driver["runqueue_s"] = None if waited is None else waited * driver["wall_s"]


def _verdict(
    tmp_path: Path,
    own: tuple[float, float],
    busy: float = 1.0,
    waited: tuple[float | None, float | None] = (0.4, 0.7),
    throttled_us: int = 0,
) -> str:
    doc: dict[str, Any] = json.loads((GOLDEN / "latency-compare.json").read_text())
    for run, share, wait in zip(doc["runs"], own, waited, strict=True):
        _waits(run, wait)
        # 10 CPU-seconds passed on the host's CPUs over the run (1,000 ticks at USER_HZ 100), `busy` of them busy
        run["evidence"]["machine"] = {
            "before": {"cpu_jiffies": {"total": 100_000, "steal": 0, "busy": 50_000}},
            "after": {"cpu_jiffies": {"total": 101_000, "steal": 0, "busy": 50_000 + round(1000 * busy)}},
        }
        if throttled_us:  # the tool's cgroup held off the CPUs by its limit over the run (core/cgroup_cpu.py)
            limit = "cpu.max 20000/100000"
            run["evidence"]["machine"]["before"]["cgroup_cpu"] = {"throttled_us": [0, 0], "limit": limit, "at_s": 1.0}
            after = {"throttled_us": [throttled_us, 0], "limit": limit, "at_s": 6.0}
            run["evidence"]["machine"]["after"]["cgroup_cpu"] = after
        for counters in run["counters"]:  # the workers' CPU: `share` of the 10 CPU-seconds, with the drivers'
            counters["cpu_s"] = 10 * share / len(run["counters"])
    return verdict_shown(doc, tmp_path)


def test_runs_left_unlike_shares_of_a_busy_host_are_said(tmp_path: Path) -> None:
    verdict = _verdict(tmp_path, (0.21, 0.12))
    assert (
        "The machine was not alike for them: other processes used 79% of the CPUs during blocking and 88% during "
        "reuseport, leaving the runs 21% and 12% (the host's CPUs all busy), and the load generator waited for a CPU "
        "70% of its time during reuseport against 40% during blocking: what parts them may be the CPU each got as "
        "much as the mode; --repeat interleaves them"
    ) in verdict, verdict


def test_a_smaller_share_without_a_longer_wait_for_a_cpu_says_nothing(tmp_path: Path) -> None:
    # the run left CPUs idle by its own doing (a mutex's sleeping worker) and others took them: no sign of the machine
    assert "not alike" not in _verdict(tmp_path, (0.81, 0.53), waited=(0.08, 0.08))
    assert "not alike" not in _verdict(tmp_path, (0.21, 0.12), waited=(0.7, 0.4))  # the larger share waited longer
    assert "not alike" not in _verdict(tmp_path, (0.21, 0.12), waited=(None, None))  # no schedstat: not known


def test_alike_shares_or_a_host_not_all_busy_say_nothing(tmp_path: Path) -> None:
    assert "not alike" not in _verdict(tmp_path, (0.21, 0.19))
    assert "not alike" not in _verdict(tmp_path, (0.21, 0.12), busy=0.6)  # the runs could have had more


def test_a_sweep_says_it_of_its_caps(tmp_path: Path) -> None:
    doc: dict[str, Any] = json.loads((GOLDEN / "sweep.json").read_text())  # caps 1 and 0
    for run, share, wait in zip(doc["runs"], (0.21, 0.12), (0.4, 0.7), strict=True):
        _waits(run, wait)
        run["evidence"]["machine"] = {
            "before": {"cpu_jiffies": {"total": 100_000, "steal": 0, "busy": 50_000}},
            "after": {"cpu_jiffies": {"total": 101_000, "steal": 0, "busy": 51_000}},
        }
        for counters in run["counters"]:
            counters["cpu_s"] = 10 * share / len(run["counters"])
    verdict = verdict_shown(doc, tmp_path)
    assert (
        "--repeat 5 says whether they differ. The machine was not alike for them: other processes used 79% of the "
        "CPUs during 1 limit and 88% during no limit, leaving the runs 21% and 12% (the host's CPUs all busy), and the "
        "load generator waited for a CPU 70% of its time during no limit against 40% during 1 limit: what parts them "
        "may be the CPU each got as much as the cap; --repeat interleaves them"
    ) in verdict, verdict
    assert "not alike" not in run_cli(["show", str(GOLDEN / "sweep.json")]).stdout


def test_runs_whose_cgroup_was_throttled_are_not_said_to_have_had_the_machine_unlike(tmp_path: Path) -> None:
    # the same shares and waits in a container whose CPU limit (cpu.max) throttled the run's cgroup: the runs' shares
    # were the limit's, not what other processes left them (each run's own lines say the throttle)
    verdict = _verdict(tmp_path, (0.21, 0.12), throttled_us=4_000_000)
    assert "not alike" not in verdict and "other processes used" not in verdict, verdict


def test_a_throttle_too_short_to_have_held_the_runs_keeps_the_machine_unlike(tmp_path: Path) -> None:
    # 2 ms of throttle in each 5-s run (a container's limit barely touched) did not make the shares the limit's:
    # others took the CPUs, and the verdict says so (core/cgroup_cpu.SHOWN_SHARE)
    verdict = _verdict(tmp_path, (0.21, 0.12), throttled_us=2_000)
    assert "The machine was not alike for them: other processes used 79% of the CPUs" in verdict, verdict
    assert "cgroup was throttled" not in verdict, verdict
