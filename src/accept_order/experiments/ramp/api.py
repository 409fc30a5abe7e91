"""The breaking point's Python API."""

from __future__ import annotations

from collections.abc import Callable

from ...core.spec import ServerSpec
from ..session import Tick
from .plan import RampPlan
from .result import RampResult
from .run import run_ramp


def ramp(server: ServerSpec, plan: RampPlan, on_step: Callable[[float], Tick | None] | None = None) -> RampResult:
    """The breaking point: the offered load stepped up until a step does not hold. An error after a step raises
    RunStopped (experiments/partial.py): its `results` hold the ramp so far, marked `stopped`, `cause` the error."""
    return run_ramp(server, plan, on_step)
