"""`compare`: one sequential run per mode (or server), side by side."""

from __future__ import annotations

from rich.console import Group, RenderableType

from ...render.stopped import stopped_early
from ..launch_notes import launch_parts
from ..parts import Experiment, attribute, lazy
from .compare_result import CompareResult
from .report import compare_table

_PLOT = "accept_order.experiments.order.plot"
_EXPORT = "accept_order.results.export"  # its tables, imported by `show --format csv` alone


def compare_report(result: CompareResult) -> RenderableType:
    table = compare_table(result.runs, result.skipped)
    notes = launch_parts(r.server for r in result.runs)
    if not result.interrupted:
        return Group(table, *notes) if notes else table
    return Group(table, *notes, stopped_early([r.server.label for r in result.runs if r.interrupted]))


COMPARE: Experiment[CompareResult] = Experiment(
    kind="compare",
    v1="sequential",
    load=CompareResult.from_dict,
    shape_of=attribute("accept_order.experiments.order.compare_result", "COMPARE_SHAPE"),
    report=compare_report,
    figure=lazy(_PLOT, "compare_figure"),
    tables={"records": lazy(_EXPORT, "records"), "workers": lazy(_EXPORT, "workers")},
    several=True,
)
