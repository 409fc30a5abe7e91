"""ramp --rates 400,200 ran both steps and said 'Every step held, up to 200/s: the breaking point is further out'
of a ramp whose highest step was 400/s (and --rates 100,100 ran one step twice): the knee is read as the last
step that held before the first that did not, which means something only in rising order. Refused first."""

from __future__ import annotations

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.errors import PlanError
from accept_order.experiments.ramp.plan import RampPlan


def test_steps_that_do_not_rise_are_refused_in_one_line() -> None:
    assert_one_error_line(run_cli(["ramp", "--rates", "400,200", "--step", "200ms"]), 2, "--rates must rise", "400,200")
    assert_one_error_line(run_cli(["ramp", "--concurrency-steps", "4,4"]), 2, "--concurrency-steps must rise")


def test_rising_steps_pass() -> None:
    assert RampPlan(rates=(100.0, 200.0), step_s=0.2).validated().offered == [100.0, 200.0]
    with pytest.raises(PlanError):
        RampPlan(concurrencies=(8, 2)).validated()
