"""Latency under a closed-loop load: `latency` (one run), `latency --modes` (latency-compare: one per mode)
and `sweep` (one per cap on the connections accepted per wakeup)."""

from __future__ import annotations

from rich.console import RenderableType

from ...results import export
from .. import Experiment, lazy
from .model_report import model_csv
from .report import compare_report, latency_report, sweep_report
from .result import LATENCY_COMPARE_SHAPE, LATENCY_SHAPE, SWEEP_SHAPE, LatencyCompareResult, LatencyResult, SweepResult

_PLOT = "accept_order.experiments.latency.plot"
_TABLES = {"histogram": export.histogram, "workers": export.workers, "model": model_csv}


def latency_compare_report(result: LatencyCompareResult) -> RenderableType:
    return compare_report(result.runs, result.skipped)


def sweep_result_report(result: SweepResult) -> RenderableType:
    return sweep_report(result.runs)


LATENCY: Experiment[LatencyResult] = Experiment(
    kind="latency",
    load=LatencyResult.from_dict,
    shape=LATENCY_SHAPE,
    report=latency_report,
    figure=lazy(_PLOT, "latency_figure"),
    tables=_TABLES,
    latency_runs=export.histograms,
)
LATENCY_COMPARE: Experiment[LatencyCompareResult] = Experiment(
    kind="latency-compare",
    load=LatencyCompareResult.from_dict,
    shape=LATENCY_COMPARE_SHAPE,
    report=latency_compare_report,
    figure=lazy(_PLOT, "latency_compare_figure"),
    tables=_TABLES,
    latency_runs=export.histograms,
    several=True,
)
SWEEP: Experiment[SweepResult] = Experiment(
    kind="sweep",
    load=SweepResult.from_dict,
    shape=SWEEP_SHAPE,
    report=sweep_result_report,
    figure=lazy(_PLOT, "sweep_figure"),
    tables=_TABLES,
    latency_runs=export.histograms,
    several=True,
)
