"""The burst experiment's Python API."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core.spec import ServerSpec
from ..session import Tick
from .result import BurstRun
from .run import BurstPlan, burst_table


def burst(
    servers: Sequence[ServerSpec], plan: BurstPlan, on_burst: Callable[[ServerSpec, int], Tick | None] | None = None
) -> list[BurstRun]:
    """Seed 004's table: every burst of `plan` against each server, one server started at a time. An error after
    a burst raises RunStopped (experiments/partial.py): its `results` are the runs so far, `cause` the error."""
    return burst_table(servers, plan, on_burst)
