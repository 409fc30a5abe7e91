"""The breaking point: the load stepped up until errors appear or the tail passes a bound, and why."""

from __future__ import annotations

from typing import Any

from ...results import export
from ..parts import Experiment, lazy
from .report import ramp_report
from .result import RAMP_SHAPE, RampResult


def steps(runs: list[dict[str, Any]]) -> str:
    """One row per step of the ramp, flattened, with what the table says of it: the rate it served (got/s), its
    failures (flat() leaves out an empty errors dict, so a step that failed none had no column saying so), whether
    it held and why not (lists of words are no flat() column either)."""
    steps = export.zero_filled([s for run in runs for s in run["steps"]])
    labels = [export.label(run) for run in runs for _ in run["steps"]]
    return export.flat_table(
        [{"run": name, **export.flat(s), **_judged(s)} for name, s in zip(labels, steps, strict=True)]
    )


def _judged(step: dict[str, Any]) -> dict[str, Any]:
    wall = step.get("wall_s", 0)
    return {
        # the table's got/s (RampStep.throughput), which --modes' rows give too: not left to the reader's sum; with
        # what replies that named no worker served (a --target's stock page: 0.0 read beside 1,939 served)
        "got_per_s": round((sum(step.get("served", [])) + step.get("unnamed", 0)) / wall, 1) if wall > 0 else 0.0,
        "failed": sum(step.get("errors", {}).values()),
        "held": not step.get("reasons") and not step.get("interrupted"),
        "reasons": "; ".join(step.get("reasons", [])),
    }


def hosts(runs: list[dict[str, Any]]) -> str:
    """--clients: one row per client host of each step (a header only for a ramp driven from one host)."""
    return export.part_hosts(runs, "steps", "offered", "offered")


RAMP: Experiment[RampResult] = Experiment(
    kind="ramp",
    load=RampResult.from_dict,
    shape_of=lambda: RAMP_SHAPE,
    report=ramp_report,
    figure=lazy("accept_order.experiments.ramp.plot", "ramp_figure"),
    tables={"steps": steps, "hosts": hosts},
)
