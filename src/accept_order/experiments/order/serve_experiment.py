"""`serve`: connections made by hand, tallied when it stops."""

from __future__ import annotations

from typing import Any

from ..parts import Experiment, attribute, lazy
from .report import serve_report
from .serve_result import ServeResult

_PLOT = "accept_order.experiments.order.plot"


def serve_records(runs: list[dict[str, Any]]) -> str:
    """Who accepted each connection, in accept order: all serve knows (no client of ours timed them)."""
    from ...results import export

    rows = []
    for run in runs:
        label = export.label(run)
        rows += [[label, seq, worker, "", "", "", "", ""] for seq, worker in enumerate(run.get("sequence", []))]
    return export.csv_text(export.RECORD_COLUMNS, rows)


SERVE: Experiment[ServeResult] = Experiment(
    kind="serve",
    load=ServeResult.from_dict,
    shape_of=attribute("accept_order.experiments.order.serve_result", "SERVE_SHAPE"),
    report=serve_report,
    figure=lazy(_PLOT, "serve_figure"),
    tables={"workers": lazy("accept_order.results.export", "workers"), "records": serve_records},
)
