"""`compare`: one sequential run per mode (or server), side by side."""

from __future__ import annotations

from rich.console import Group, RenderableType

from ...render.stopped import stopped_early
from ...results import export
from ..parts import Experiment, lazy
from .compare_result import COMPARE_SHAPE, CompareResult
from .report import compare_table

_PLOT = "accept_order.experiments.order.plot"


def compare_report(result: CompareResult) -> RenderableType:
    table = compare_table(result.runs, result.skipped)
    if not result.interrupted:
        return table
    return Group(table, stopped_early([r.server.label for r in result.runs if r.interrupted]))


COMPARE: Experiment[CompareResult] = Experiment(
    kind="compare",
    v1="sequential",
    load=CompareResult.from_dict,
    shape=COMPARE_SHAPE,
    report=compare_report,
    figure=lazy(_PLOT, "compare_figure"),
    tables={"records": export.records, "workers": export.workers},
    several=True,
)
