"""The thundering herd: how many workers one connection wakes, in every mode."""

from __future__ import annotations

from ...render.herd import herd_report
from ...results import export
from ...results.herd import HerdResult
from .. import Experiment, lazy

HERD: Experiment[HerdResult] = Experiment(
    kind="herd",
    load=HerdResult.from_dict,
    report=herd_report,
    figure=lazy("accept_order.render.plot_runs", "herd_figure"),
    tables={"records": export.records, "workers": export.workers},
    several=True,
)
