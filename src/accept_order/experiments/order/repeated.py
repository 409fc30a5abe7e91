"""`compare --repeat N` (and `herd --repeat N`, whose runs are of the same kind): per mode the order the
runs showed and how many of them agree, and Jain's fairness and the workers' sleeps (voluntary context
switches) per connection as median and range over the runs."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ...analysis.stability import Spread, names_of, order_stability
from ...results import export
from ..repeat.kinds import Document, Repeated, Rounds, by_variant
from .result import RUN_SHAPE, RunResult


def _table(repeated: Repeated, rounds: Rounds) -> Table:
    of = repeated.of
    table = Table(title=f"accept-order {of} --repeat", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("mode", "verdict over the runs", "Jain", "sleeps/conn"):
        table.add_column(name, justify="right" if name in ("Jain", "sleeps/conn") else "left")
    stability = order_stability(rounds)
    for label, runs in by_variant(repeated, rounds).items():
        sleeps = [r.verdict.woken_per_connection for r in runs if r.verdict.woken_per_connection is not None]
        verdict = Text(stability[label].text, style="green" if stability[label].conclusive else "yellow")
        table.add_row(
            label,
            verdict,
            Spread.of([r.verdict.jain for r in runs]).text(),
            Spread.of(sleeps).text(fmt="{:.1f}") if sleeps else "-",
        )
    return table


def _rows(run: Document) -> list[list[Any]]:
    records = run["records"]
    served = sum(1 for r in records if r.get("error") is None)
    return [[export.label(run), len(records), served, len(records) - served, run.get("verdict", {}).get("pattern")]]


def _worker_rows(run: Document) -> list[list[Any]]:
    return export.worker_rows([run])


def _jain(run: RunResult) -> float:
    return run.verdict.jain


def order_repeated(of: str) -> Repeated:
    """The repeat of an experiment whose runs are sequential runs (RunResult)."""

    def report(rounds: Rounds) -> list[RenderableType]:
        return [_table(repeated, rounds)]

    repeated = Repeated(
        of=of,
        load=RunResult.from_dict,
        shape=RUN_SHAPE,
        names=names_of,
        report=report,
        columns=("run", "connections", "served", "failed", "pattern"),
        rows=_rows,
        worker_columns=("run", *export.WORKER_FIELDS, "served"),
        worker_rows=_worker_rows,
        value=_jain,
        what="Jain's fairness index",
    )
    return repeated


RUN_REPEATED = order_repeated("run")
COMPARE_REPEATED = order_repeated("compare")
