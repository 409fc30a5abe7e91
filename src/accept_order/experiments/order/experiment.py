"""Who serves in order: `run` (one sequential run). `compare` (one per mode) and `serve` (connections by hand,
tallied when it stops) are in compare_experiment.py and serve_experiment.py: `show` of one kind's file makes
that kind's result and file shape alone (issue 30: start-up)."""

from __future__ import annotations

from ..parts import Experiment, attribute, lazy
from .report import run_report
from .result import RunResult

_PLOT = "accept_order.experiments.order.plot"
_EXPORT = "accept_order.results.export"  # its tables, imported by `show --format csv` alone

RUN: Experiment[RunResult] = Experiment(
    kind="run",
    v1="sequential",
    load=RunResult.from_dict,
    shape_of=attribute("accept_order.experiments.order.result", "RUN_SHAPE"),
    report=run_report,
    figure=lazy(_PLOT, "run_figure"),
    tables={"records": lazy(_EXPORT, "records"), "workers": lazy(_EXPORT, "workers")},
)
