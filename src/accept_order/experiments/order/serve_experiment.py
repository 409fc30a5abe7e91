"""`serve`: connections made by hand, tallied when it stops."""

from __future__ import annotations

from typing import Any

from ...results import export
from ..parts import Experiment, lazy
from .report import serve_report
from .serve_result import SERVE_SHAPE, ServeResult

_PLOT = "accept_order.experiments.order.plot"


def serve_records(runs: list[dict[str, Any]]) -> str:
    """Who accepted each connection, in accept order: all serve knows (no client of ours timed them)."""
    rows = []
    for run in runs:
        label = export.label(run)
        rows += [[label, seq, worker, "", "", "", "", ""] for seq, worker in enumerate(run.get("sequence", []))]
    return export.csv_text(export.RECORD_COLUMNS, rows)


SERVE: Experiment[ServeResult] = Experiment(
    kind="serve",
    load=ServeResult.from_dict,
    shape=SERVE_SHAPE,
    report=serve_report,
    figure=lazy(_PLOT, "serve_figure"),
    tables={"workers": export.workers, "records": serve_records},
)
