"""ramp cut short by Ctrl-C in its first step: the connections in flight at the stop count as aborted (the
load's rule), and 'ramp -w 2 --work 500us --rates 200,400 --step 500ms --p99 20ms' stopped at 0.7 s said
'Knee: no step held; the first that did not was 200/s: 2 failed (aborted 2)': the user's Ctrl-C read as
the server's breaking point. Those are the stop's; a step cut short with nothing else against it neither
held nor broke (RampStep.cut_short), as ramp --repeat already reads it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from accept_order.core.protocol import ABORTED
from accept_order.experiments.ramp.result import RampStep
from accept_order.experiments.ramp.run import RampPlan, judge

GOLDEN = Path(__file__).parent / "data" / "golden" / "ramp.json"
PLAN = RampPlan(rates=(50.0, 100.0), step_s=0.3)


def first_step(**changes: object) -> RampStep:
    step = RampStep.from_dict(json.loads(GOLDEN.read_text())["steps"][0])
    return replace(step, p99_us=1000, p999_us=1000, **changes)  # type: ignore[arg-type]


def test_connections_aborted_by_the_stop_are_no_reason_not_to_hold() -> None:
    step = first_step(interrupted=True, errors={ABORTED: 2})
    assert judge(step, PLAN, 2) == []
    assert step.judged([], []).cut_short


def test_failures_before_the_stop_still_count() -> None:
    step = first_step(interrupted=True, errors={"ECONNREFUSED": 3, ABORTED: 2})
    assert judge(step, PLAN, 2) == ["5 failed (3 × ECONNREFUSED, 2 × aborted)"]  # the table's count, all said
    # a step that ran to its end: an aborted connection (a worker died) is a failure like any
    assert judge(first_step(errors={ABORTED: 2}), PLAN, 2) == ["2 failed (2 × aborted)"]
