"""A running server's own traffic, observed passively: who took what share, over time."""

from __future__ import annotations

from typing import Any

from ...results import export
from ..parts import Experiment, lazy
from .report import observe_report
from .result import OBSERVE_SHAPE, ObserveResult


def intervals(runs: list[dict[str, Any]]) -> str:
    """One row per interval and worker: what it took and used then, with the queue of that interval."""
    rows: list[dict[str, Any]] = []
    for run in runs:
        for interval in run["intervals"]:
            for index, worker in enumerate(run["workers"]):
                empty = interval["empty"]
                rows.append(
                    {
                        "run": run["target"],
                        "end_s": interval["end_s"],
                        "span_s": interval["span_s"],
                        "worker": index,
                        "pid": worker["pid"],
                        "tid": worker["tid"],
                        "accepts" if run["traced"] else "seen": interval["accepts"][index],
                        "empty": empty[index] if empty else "",
                        "cpu": interval["cpu"][index],
                        "queue_max": interval["queue_max"],
                        "queue_mean": interval["queue_mean"],
                        "overflows": interval["overflows"],
                        # the load, where it was read (a file from before has neither)
                        **({"held": interval["held"][index]} if interval.get("held") else {}),
                        **({"bytes_in": interval["bytes_in"][index]} if interval.get("bytes_in") else {}),
                    }
                )
    return export.flat_table(rows)


def workers(runs: list[dict[str, Any]]) -> str:
    """One row per worker: what it took and used over the whole observation."""
    rows = [{"run": run["target"], **worker} for run in runs for worker in run["workers"]]
    return export.flat_table(rows)


OBSERVE: Experiment[ObserveResult] = Experiment(
    kind="observe",
    load=ObserveResult.from_dict,
    shape_of=lambda: OBSERVE_SHAPE,
    report=observe_report,
    figure=lazy("accept_order.experiments.observe.plot", "observe_figure"),
    tables={"intervals": intervals, "workers": workers},
)
