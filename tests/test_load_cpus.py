"""--load-cpus: the load generator's processes pinned off the workers' CPUs, on every command that drives a load."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psutil
import pytest
from conftest import run_cli

from accept_order.core.cpus import allowed_cpus
from accept_order.core.errors import PlanError
from accept_order.core.spec import ConcurrentLoad
from accept_order.core.target import ReplyAttribution
from accept_order.loads.generator import LoadGenerator

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs sched_setaffinity")
TWO_CPUS = pytest.mark.skipif(len(allowed_cpus()) < 2, reason="needs two CPUs: one for the workers, one for the load")


@LINUX_ONLY
def test_every_driver_process_runs_pinned_before_it_says_ready() -> None:
    cpu = allowed_cpus()[-1]
    load = ConcurrentLoad(connections=4, concurrency=2, driver_procs=2, cpus=(cpu,))
    with LoadGenerator(("127.0.0.1", 9), ReplyAttribution(()), load) as gen:  # started: every driver said ready
        assert [psutil.Process(p.pid).cpu_affinity() for p in gen.procs] == [[cpu], [cpu]]
    assert os.sched_getaffinity(0) == set(allowed_cpus())  # the tool itself stays where it was


def test_a_cpu_this_process_may_not_use_is_refused() -> None:
    with pytest.raises(PlanError, match="--load-cpus: CPU 4096 not available here"):
        ConcurrentLoad(connections=4, cpus=(4096,)).validated()


def test_old_files_without_load_cpus_load_and_save_as_before() -> None:
    load = ConcurrentLoad.from_dict({"kind": "closed-loop", "connections": 5, "concurrency": 2})
    assert load.cpus == () and "cpus" not in load.to_dict()
    pinned = ConcurrentLoad.from_dict({**load.to_dict(), "cpus": [1]})
    assert pinned.cpus == (1,) and pinned.to_dict()["cpus"] == [1]


@pytest.mark.parametrize(
    "command",
    [
        ["latency", "-n", "10"],
        ["sweep", "-n", "10"],
        ["burst", "--clients", "5"],
        ["ramp", "--rates", "10"],
        ["reload", "--duration", "1s"],
    ],
)
def test_overlapping_the_workers_cpus_is_refused_in_one_line_everywhere(command: list[str]) -> None:
    result = run_cli([*command, "--cpus", "0", "--load-cpus", "0"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--load-cpus 0 overlaps the workers' CPUs 0 (--cpus or --pin)" in lines[0], lines


@LINUX_ONLY
@TWO_CPUS
def test_pin_takes_every_cpu_so_any_load_cpu_overlaps() -> None:
    result = run_cli(["latency", "-n", "10", "--pin", "--load-cpus", str(allowed_cpus()[-1])])
    assert result.exit_code == 2 and "overlaps the workers' CPUs" in result.stderr


@LINUX_ONLY
@TWO_CPUS
def test_a_pinned_latency_run_saves_and_shows_the_load_cpus(tmp_path: Path) -> None:
    first, last = allowed_cpus()[0], allowed_cpus()[-1]
    path = tmp_path / "pinned.json"
    args = ["latency", "-w", "2", "-n", "100", "-c", "4", "--cpus", str(first), "--load-cpus", str(last)]
    result = run_cli([*args, "--json", str(path)], columns=200)
    assert result.exit_code == 0, result.output
    assert f"2 driver processes on CPUs {last}" in result.stdout
    assert json.loads(path.read_text())["load"]["cpus"] == [last]
    assert f"on CPUs {last}" in run_cli(["show", str(path)], columns=200).stdout


@LINUX_ONLY
@TWO_CPUS
def test_unpinned_workers_are_warned_about_not_refused() -> None:
    result = run_cli(["latency", "-w", "2", "-n", "50", "-c", "2", "--load-cpus", str(allowed_cpus()[-1])])
    assert result.exit_code == 0, result.output
    assert "warning: the workers are not pinned (no --cpus or --pin): they may still run on CPU" in result.stderr
