"""`inspect`: a running server's accept mechanism, read from /proc."""

from __future__ import annotations

from typing import Any

from ..parts import Experiment, attribute, lazy
from .report import inspect_report
from .result import InspectResult


def workers(documents: list[dict[str, Any]]) -> str:
    """One row per worker (thread where threaded): how it waits and on what."""
    from ...results import export  # the tables' module, imported by `show --format csv` alone

    return export.flat_table([{"run": d["target"], **export.flat(u)} for d in documents for u in d["units"]])


INSPECT: Experiment[InspectResult] = Experiment(
    kind="inspect",
    load=InspectResult.from_dict,
    shape_of=attribute("accept_order.experiments.inspect.result", "INSPECT_SHAPE"),
    report=inspect_report,
    figure=lazy("accept_order.experiments.inspect.plot", "inspect_figure"),
    tables={"waits": workers},
)
