"""Seed 004's table: N clients connect at once; the time until every one was served, per server and mode."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ...core.totals import loops_ran
from ...results import export
from ..parts import Experiment, lazy
from .report import burst_report
from .result import BURST_SHAPE, BurstCell, BurstResult
from .verdict import burst_derived, burst_verdicts


def steps(runs: list[dict[str, Any]]) -> str:
    """One row per cell (a run's burst of N clients), flattened; of the drivers' own figures, only their CPU
    per connection (rebuilt from them: a file saved before it was written has it too)."""
    rows: list[dict[str, Any]] = []
    filled = iter(export.zero_filled([c for run in runs for c in run["cells"]]))
    for run in runs:
        label = export.label(run)
        for c in (next(filled) for _ in run["cells"]):
            row = {"run": label, **export.flat({k: v for k, v in c.items() if k != "drivers"})}
            cell = BurstCell.from_dict(c)
            row["client_cpu_us"] = cell.client_cpu_us
            row["loop"] = loops_ran(cell.drivers) or None  # empty before 0.3 (epoll)
            row["failed"] = cell.failed  # flat() leaves out an empty errors dict: a column whatever failed
            rows.append(row)
    return export.flat_table(rows)


def hosts(runs: list[dict[str, Any]]) -> str:
    """--client-hosts: one row per client host of each burst (a header only for bursts driven from one host)."""
    return export.part_hosts(runs, "cells", "clients", "clients")


def report(result: BurstResult) -> RenderableType:
    """The table, and after it, when a signal stopped the runs, which column it cut and that the modes after it
    never ran (their columns are missing, not empty: burst --modes a,b stopped in b showed a alone, unsaid)."""
    verdicts = burst_verdicts(result)
    if not result.interrupted:
        return Group(burst_report(result), *verdicts)
    cut = [run.server.label for run in result.runs if run.interrupted]
    said = f"the {cut[-1]} column is the bursts until then" if cut else "the columns are the runs that finished"
    line = Text(f"Stopped early: interrupted; {said}, and no later variant ran.", style="bold yellow")
    return Group(burst_report(result), *verdicts, line)


BURST: Experiment[BurstResult] = Experiment(
    kind="burst",
    load=BurstResult.from_dict,
    shape_of=lambda: BURST_SHAPE,
    report=report,
    figure=lazy("accept_order.experiments.burst.plot", "burst_figure"),
    tables={"steps": steps, "hosts": hosts},
    several=True,
    derived=burst_derived,
)
