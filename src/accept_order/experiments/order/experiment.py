"""Who serves in order: `run` (one sequential run), `compare` (one per mode) and `serve` (connections by
hand, tallied when it stops)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType

from ...render.stopped import stopped_early
from ...results import export
from ..parts import Experiment, lazy
from .compare_result import COMPARE_SHAPE, CompareResult
from .report import compare_table, run_report, serve_report
from .result import RUN_SHAPE, RunResult
from .serve_result import SERVE_SHAPE, ServeResult

_PLOT = "accept_order.experiments.order.plot"


def compare_report(result: CompareResult) -> RenderableType:
    table = compare_table(result.runs, result.skipped)
    if not result.interrupted:
        return table
    return Group(table, stopped_early([r.server.label for r in result.runs if r.interrupted]))


def serve_records(runs: list[dict[str, Any]]) -> str:
    """Who accepted each connection, in accept order: all serve knows (no client of ours timed them)."""
    rows = []
    for run in runs:
        label = export.label(run)
        rows += [[label, seq, worker, "", "", "", "", ""] for seq, worker in enumerate(run.get("sequence", []))]
    return export.csv_text(export.RECORD_COLUMNS, rows)


RUN: Experiment[RunResult] = Experiment(
    kind="run",
    v1="sequential",
    load=RunResult.from_dict,
    shape=RUN_SHAPE,
    report=run_report,
    figure=lazy(_PLOT, "run_figure"),
    tables={"records": export.records, "workers": export.workers},
)
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
SERVE: Experiment[ServeResult] = Experiment(
    kind="serve",
    load=ServeResult.from_dict,
    shape=SERVE_SHAPE,
    report=serve_report,
    figure=lazy(_PLOT, "serve_figure"),
    tables={"workers": export.workers, "records": serve_records},
)
