"""A ramp or burst stopped by Ctrl-C after a step kept its steps but not the machine they ran on: its file had
no environment (kernel, CPUs, somaxconn, Python) and its report lost 'Linux 6.18..., 2 CPUs' ('ramp ... --json
r.json' stopped 2.9 s in; 'burst --clients 1000,3000' stopped in its second burst). The machine is kept."""

from __future__ import annotations

import pytest

from accept_order.core.spec import ServerSpec
from accept_order.experiments.burst.run import BurstPlan, run_bursts
from accept_order.experiments.ramp.plan import RampPlan
from accept_order.experiments.ramp.run import run_ramp
from accept_order.experiments.session import RunInterrupted


def _stop_at_the_second(calls: list[object]) -> object:
    """on_step/on_burst: Ctrl-C as the second step (burst) begins, after the first was kept."""
    if len(calls) == 1:
        raise KeyboardInterrupt
    calls.append(1)
    return None


def test_a_ramp_stopped_after_a_step_keeps_its_machine() -> None:
    calls: list[object] = []
    plan = RampPlan(rates=(20.0, 40.0), step_s=0.2, driver_procs=1, keep_going=True)
    with pytest.raises(RunInterrupted) as stopped:
        run_ramp(ServerSpec(mode="epoll", workers=1), plan, lambda offered: _stop_at_the_second(calls))
    (result,) = stopped.value.results
    assert len(result.steps) == 1 and result.environment is not None and result.environment.cpu_count >= 1


def test_a_burst_stopped_after_a_burst_keeps_its_machine() -> None:
    calls: list[object] = []
    plan = BurstPlan(clients=(5, 10), driver_procs=1)
    with pytest.raises(RunInterrupted) as stopped:
        run_bursts(ServerSpec(mode="epoll", workers=1), plan, lambda spec, n: _stop_at_the_second(calls))
    (result,) = stopped.value.results
    assert len(result.cells) == 1 and result.environment is not None and result.environment.kernel
