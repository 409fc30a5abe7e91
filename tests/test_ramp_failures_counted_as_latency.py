"""ramp's reason a step did not hold counts its failures as latency and run do, count first: 'ramp --target
127.0.0.1:8000 --protocol http -w 3 --rates 100,200' at a gunicorn whose page names no worker read 'Knee: no step
held; the first that did not was 100/s: 200 failed (bad reply 200)', where 'bad reply 200' reads as an HTTP status
(and 'bad reply (HTTP 500) 200' would read worse). Now '200 failed (200 × bad reply)', as latency's '500 × bad
reply'."""

from __future__ import annotations

from test_ramp_stopped_aborts_are_no_reason import PLAN, first_step

from accept_order.experiments.ramp.run import judge


def test_a_failed_step_counts_each_failure_before_its_name() -> None:
    assert judge(first_step(errors={"bad reply": 200}), PLAN, 2) == ["200 failed (200 × bad reply)"]
    both = first_step(errors={"bad reply (HTTP 500)": 3, "timeout": 7})
    assert judge(both, PLAN, 2) == ["10 failed (7 × timeout, 3 × bad reply (HTTP 500))"]
