"""The atlas: every installed server in each of its modes, measured the same way, in one table."""

from __future__ import annotations

from typing import Any

from ...results import export
from ..parts import Experiment, lazy
from .report import atlas_report
from .result import ATLAS_SHAPE, AtlasResult, AtlasRow

COLUMNS = ("round", "server", "mode", "setting", "seen_as", "order", "order_fit", "expected", "woken", "served",
           "jain", "busiest", "failed", "p99_us", "error")  # fmt: skip


def rows(documents: list[dict[str, Any]]) -> str:
    """One row per server, mode and round, every figure the table shows and the full order pattern."""
    out = []
    for doc in documents:
        for row in doc["rows"]:
            typed = AtlasRow.from_dict(row)
            values = {**row, "served": " ".join(str(n) for n in typed.served), "jain": typed.jain,
                      "busiest": typed.busiest}  # fmt: skip
            out.append([values.get(c) for c in COLUMNS])
    return export.csv_text(COLUMNS, out)


ATLAS: Experiment[AtlasResult] = Experiment(
    kind="atlas",
    load=AtlasResult.from_dict,
    shape_of=lambda: ATLAS_SHAPE,
    report=atlas_report,
    figure=lazy("accept_order.experiments.atlas.plot", "atlas_figure"),
    tables={"rows": rows},
)
