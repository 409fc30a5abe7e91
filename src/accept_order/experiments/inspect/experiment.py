"""`inspect`: a running server's accept mechanism, read from /proc."""

from __future__ import annotations

from typing import Any

from ...results import export
from ..parts import Experiment, lazy
from .report import inspect_report
from .result import INSPECT_SHAPE, InspectResult


def workers(documents: list[dict[str, Any]]) -> str:
    """One row per worker (thread where threaded): how it waits and on what."""
    return export.flat_table([{"run": d["target"], **export.flat(u)} for d in documents for u in d["units"]])


INSPECT: Experiment[InspectResult] = Experiment(
    kind="inspect",
    load=InspectResult.from_dict,
    shape=INSPECT_SHAPE,
    report=inspect_report,
    figure=lazy("accept_order.experiments.inspect.plot", "inspect_figure"),
    tables={"waits": workers},
)
