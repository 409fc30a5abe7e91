"""`accept-order ramp` (seed 002's breaking point): steps in order, every connection of a step counted,
stopping at the first step that does not hold and saying why; HAProxy's maxconn leaves the excess waiting
in the listen queue (back-pressure) where the kernel shows it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.spec import ServerSpec
from accept_order.experiments.ramp.plan import RampPlan
from accept_order.experiments.ramp.run import run_ramp
from accept_order.servers.launched.haproxy import haproxy_missing


def test_every_step_is_counted_and_saved(tmp_path: Path) -> None:
    """Open-loop steps of 100 and 200 new connections a second for 0.5 s each: every connection started was
    served (the listen queue, 511, holds far more than are ever in flight), none beyond the ones that came due,
    and each served connection left a TIME-WAIT socket behind (the worker closes first; TIME-WAIT lasts 60 s,
    so step 2 still sees step 1's). Whether the load generator started every due connection in time is a
    matter of CPU time on a shared machine, so the step's own "held" is not asserted."""
    out = tmp_path / "ramp.json"
    result = run_cli(["ramp", "-w", "2", "--rates", "100,200", "--step", "500ms", "--keep-going", "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["kind"] == "ramp" and [s["offered"] for s in doc["steps"]] == [100, 200]
    procs = doc["plan"]["driver_procs"]
    served_so_far = 0
    for step in doc["steps"]:
        served = sum(step["served"])
        assert step["kind"] == "rate" and step["errors"] == {}, step
        # Connection k of a driver is due at k / its rate: one more per driver may start at the deadline.
        assert 0 < served <= step["offered"] * 0.5 + procs, step
        served_so_far += served
        assert step["sockets"]["time-wait"] >= served_so_far, step["sockets"]
        assert step["sockets"]["listen"] >= 1 and len(step["queues"]) == 1, step  # one shared listener
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0 and "accept-order ramp" in shown.stdout


def test_it_stops_at_the_first_step_that_does_not_hold_and_says_why() -> None:
    """No connection takes under a microsecond: the first step cannot hold, and the ramp goes no further."""
    plan = RampPlan(concurrencies=(2, 4, 8), step_s=0.3, p99_ms=0.001)
    result = run_ramp(ServerSpec(workers=2), plan)
    assert len(result.steps) == 1
    held, broke = result.knee
    assert held is None and broke is result.steps[0]
    assert broke.errors == {} and sum(broke.served) > 0  # it broke on its tail alone
    (reason,) = broke.reasons
    assert re.fullmatch(r"p99 \d+\.\d ms > 0\.001 ms", reason), reason


@pytest.mark.skipif(bool(haproxy_missing()), reason=str(haproxy_missing()))
def test_haproxy_maxconn_leaves_the_excess_in_the_listen_queue() -> None:
    plan = RampPlan(concurrencies=(32,), step_s=1.0)
    result = run_ramp(ServerSpec(kind="haproxy", mode="threads", workers=1, maxconn=1, work_us=5000), plan)
    (step,) = result.steps
    assert step.failed == 0 and sum(step.served) > 0
    assert max(step.queues) > 0  # held back by maxconn, waiting where the kernel queues it


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rates", "100", "--concurrency-steps", "4"], "not both"),
        (["--maxconn", "10"], "--maxconn is HAProxy's"),
        (["--rates", "0"], "positive"),
    ],
)
def test_bad_input_is_one_line(args: list[str], message: str) -> None:
    result = run_cli(["ramp", *args])
    assert_one_error_line(result, 2, message)
    assert result.stdout == ""
