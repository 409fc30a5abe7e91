"""One worker goes mid-load: what each mode loses (served, reset, refused, timed out) and why."""

from __future__ import annotations

from typing import Any

from ...results import export
from ..parts import Experiment, lazy
from .report import reload_report
from .result import RELOAD_SHAPE, ReloadResult

_KEEP = (
    "how",
    "migrate",
    "worker",
    "at_s",
    "gone_s",
    "held",
    "served",
    "finished",
    "errors",
    "counters",
    "client_cpu_us",
    "loop",
)


def steps(runs: list[dict[str, Any]]) -> str:
    """One row per run (a mode, how the worker went, tcp_migrate_req), flattened."""
    return export.flat_table(
        [
            # failed: flat() leaves out an empty errors dict, so a run that lost none had no column saying so
            {
                "run": export.label(r),
                **export.flat({k: r.get(k) for k in _KEEP}),
                "failed": sum((r.get("errors") or {}).values()),
            }
            for r in runs
        ]
    )


RELOAD: Experiment[ReloadResult] = Experiment(
    kind="reload",
    load=ReloadResult.from_dict,
    shape_of=lambda: RELOAD_SHAPE,
    report=reload_report,
    figure=lazy("accept_order.experiments.reload.plot", "reload_figure"),
    tables={"steps": steps},
    several=True,
)
