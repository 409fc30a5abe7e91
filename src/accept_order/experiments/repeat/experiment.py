"""`--repeat N` of run, compare, herd, latency, sweep, burst, ramp and reload: the variants in interleaved
rounds, medians and ranges, how many rounds agree, and what the machine did meanwhile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import RenderableType

from ...histogram import LatencyHistogram
from ...results import export
from .. import Document, Experiment, lazy
from .kinds import find_repeated
from .report import repeat_report
from .result import LATENCY_KINDS, REPEAT_SHAPE, RepeatResult

_LATENCY = ("count", "failed", "p50_us", "p99_us", "p999_us", "max_us", "wall_s")
_ORDER = ("connections", "served", "failed", "pattern")


def _latency_cells(run: Document) -> list[Any]:
    h = LatencyHistogram.from_dict(run["histogram"])
    tail = [h.percentile(q) if h.count else None for q in (50, 99, 99.9)]
    return [h.count, sum(run.get("errors", {}).values()), *tail, h.max_us, run.get("wall_s")]


def _order_cells(run: Document) -> list[Any]:
    records = run["records"]
    served = sum(1 for r in records if r.get("error") is None)
    return [len(records), served, len(records) - served, run.get("verdict", {}).get("pattern")]


def _numbered(docs: list[Document], rows_of: Callable[[Document], list[list[Any]]]) -> list[list[Any]]:
    """A repeated burst's, ramp's or reload's own rows of each run, each after its round's number."""
    out = []
    for doc in docs:
        for number, row in enumerate(doc["rounds"], 1):
            out += [[number, *cells] for run in row for cells in rows_of(run)]
    return out


def rounds(docs: list[Document]) -> str:
    """One row per run of each round: the round, the run, and its figures (latency or order; a burst's,
    ramp's or reload's own rows, several per run)."""
    kind = find_repeated(docs[0].get("of", "")) if docs else None
    if kind is not None:
        return export.csv_text(("round", *kind.columns), _numbered(docs, kind.rows))
    latency = bool(docs) and docs[0].get("of") in LATENCY_KINDS
    rows = []
    for doc in docs:
        cells = _latency_cells if doc.get("of") in LATENCY_KINDS else _order_cells
        for number, row in enumerate(doc["rounds"], 1):
            rows += [[number, export.label(run), *cells(run)] for run in row]
    return export.csv_text(("round", "run", *(_LATENCY if latency else _ORDER)), rows)


def workers(docs: list[Document]) -> str:
    """One row per worker of each run of each round."""
    kind = find_repeated(docs[0].get("of", "")) if docs else None
    if kind is not None:
        return export.csv_text(("round", *kind.worker_columns), _numbered(docs, kind.worker_rows))
    rows = []
    for doc in docs:
        for number, row in enumerate(doc["rounds"], 1):
            rows += [[number, *cells] for cells in export.worker_rows(row)]
    return export.csv_text(("round", "run", *export.WORKER_FIELDS, "served"), rows)


def report(result: RepeatResult) -> RenderableType:
    return repeat_report(
        result.of, result.rounds, result.skipped, result.machine, result.cpus, result.notes, result.interrupted
    )


REPEAT: Experiment[RepeatResult] = Experiment(
    kind="repeat",
    load=RepeatResult.from_dict,
    shape=REPEAT_SHAPE,
    report=report,
    figure=lazy("accept_order.experiments.repeat.plot", "repeat_figure"),
    tables={"rounds": rounds, "workers": workers},
)
