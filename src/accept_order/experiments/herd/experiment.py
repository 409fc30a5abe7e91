"""The thundering herd: how many workers one connection wakes, in every mode."""

from __future__ import annotations

from ...results import export
from ..parts import Experiment, lazy
from .report import herd_report
from .result import HERD_SHAPE, HerdResult

HERD: Experiment[HerdResult] = Experiment(
    kind="herd",
    v1="sequential",
    load=HerdResult.from_dict,
    shape_of=lambda: HERD_SHAPE,
    report=herd_report,
    figure=lazy("accept_order.experiments.herd.plot", "herd_figure"),
    tables={"records": export.records, "workers": export.workers},
    several=True,
)
