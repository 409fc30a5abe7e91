"""Client hosts kept between a run's loads (a ramp's steps), when something ends the run during a later load: the
load then runs in another of the host's execnet threads (not its main one), and it must end as the first load
does: SIGKILL, SIGTERM of the coordinator, or an error after some steps (RunStopped: the steps so far saved, exit 1).
Nothing is left on this host or in any namespace. A real cluster (tests/cluster.py), as test_clients_faults.py."""

from __future__ import annotations

import signal
from pathlib import Path

import psutil
import pytest
from cluster import Cluster, cluster_fixture
from conftest import child_processes, wait_for
from test_clients_faults import (
    CHANNEL_CLOSED_S,
    UNDER_WAY_S,
    _remote_python,
    assert_nothing_left,
    bridge,
    opened,
    own_config,
    remote_processes,
    start,
    under_way,
)

cluster = cluster_fixture(clients=2)
STEP_S = 3.0  # long enough for a signal to land well inside the second step (found in ~0.3 s here)
STEP_RATES = "200,300,400"  # connections a second, over both hosts: UNDER_WAY_CONNECTS each within ~0.2 s


def ramp_args(c: Cluster, tmp_path: Path, clients: str = "c1,c2") -> list[str]:
    """A ramp of steps long enough for a signal to land in its second step. Open-loop steps at a few hundred
    connections a second: closed-loop ones kept the hosts' drivers and the workers on every CPU for the whole
    first step, and what is under test (a kept host's later load ended) needs a load under way, not a saturated
    one."""
    config = own_config(c, tmp_path)
    steps = ["--rates", STEP_RATES, "--step", f"{STEP_S:g}s", "--keep-going"]
    return ["ramp", "--clients", clients, "--ssh-config", config, "--host", bridge(c), "-w", "2", *steps]


def drivers(c: Cluster, name: str) -> set[int]:
    """The load's driver processes on the host: its interpreter's children (a step's own: made for it)."""
    try:
        return {p.pid for p in child_processes(_remote_python(c, name).pid)}
    except (psutil.Error, AssertionError):  # between two looks: the interpreter's children changed
        return set()


def second_step(c: Cluster, name: str, first: set[int]) -> None:
    """Wait until `name` runs drivers and none of them is the first step's: its second step has begun."""
    wait_for(
        lambda: drivers(c, name), lambda now: bool(now) and not now & first, UNDER_WAY_S + STEP_S, f"{name}'s step 2"
    )


def first_step(c: Cluster, name: str) -> set[int]:
    """The first step's drivers, once its connections are under way (a load's drivers all start before its go)."""
    return drivers(c, name)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_a_signal_in_a_later_step_ends_every_kept_hosts_load(cluster: Cluster, tmp_path: Path, how: str) -> None:
    before = opened(cluster)
    run = start(tmp_path, *ramp_args(cluster, tmp_path))
    under_way(run, cluster, before)
    first = {name: first_step(cluster, name) for name in ("c1", "c2")}
    python = _remote_python(cluster, "c1").pid
    for name in ("c1", "c2"):
        second_step(cluster, name, first[name])
    # the second step's drivers exist before its go: a signal then ends the ramp with step 1 alone (nothing of
    # step 2 measured; 1 CI run in ~26). Its connections under way are what make it a step cut short.
    under_way(run, cluster, opened(cluster))
    assert _remote_python(cluster, "c1").pid == python  # kept: the second step runs in the same interpreter
    if how == "SIGKILL":
        run.proc.kill()
        assert run.wait() == -signal.SIGKILL
        wait_for(
            lambda: [p for name in cluster.names for p in remote_processes(cluster, name)],
            lambda left: left == [],
            CHANNEL_CLOSED_S,
            "the kept hosts' loads to end as their channels closed",
        )
    else:
        run.proc.send_signal(signal.SIGTERM)
        assert run.wait() == 143, run.err.text
        steps = run.document()["steps"]
        assert len(steps) == 2 and steps[1]["interrupted"] is True, steps
    assert_nothing_left(cluster, str(tmp_path))


def test_an_error_in_a_later_step_keeps_the_steps_before_and_ends_every_host(cluster: Cluster, tmp_path: Path) -> None:
    """One host, lost during the ramp's second step: 'every client host was lost' ends the ramp (RunStopped):
    exit 1 with that line, the first step saved and the error said in the file."""
    before = opened(cluster)
    run = start(tmp_path, *ramp_args(cluster, tmp_path, "c1"))
    wait_for(lambda: opened(cluster)["c1"] - before["c1"], lambda n: n >= 20, UNDER_WAY_S, "c1's first step")
    first = first_step(cluster, "c1")
    second_step(cluster, "c1", first)
    _remote_python(cluster, "c1").kill()
    assert run.wait() == 1, run.err.text
    errors = [line for line in run.error_lines() if line.startswith("accept-order: error:")]
    # lost while the step drove ("every client host was lost") or while its drivers started ("client host c1: its
    # connection closed waiting for its drivers"): killed as the step's drivers appear, either may come first
    assert len(errors) == 1 and "client host" in errors[0] and "c1" in errors[0], run.err.text
    document = run.document()
    why = errors[0].removeprefix("accept-order: error: ")
    assert len(document["steps"]) == 1 and why in document["stopped"], document
    assert_nothing_left(cluster, str(tmp_path))
