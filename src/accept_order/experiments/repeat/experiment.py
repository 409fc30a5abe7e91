"""`--repeat N` of any experiment registered in kinds.REPEATED: the variants in interleaved rounds, medians
and ranges, how many rounds agree, and what the machine did meanwhile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import RenderableType

from ...results import export
from ..parts import Document, Experiment, lazy
from .kinds import find_repeated
from .report import repeat_report
from .result import REPEAT_SHAPE, RepeatResult


def _numbered(docs: list[Document], rows_of: Callable[[Document], list[list[Any]]]) -> list[list[Any]]:
    """The experiment's own rows of each run (one or several per run), each after its round's number."""
    out = []
    for doc in docs:
        for number, row in enumerate(doc["rounds"], 1):
            out += [[number, *cells] for run in row for cells in rows_of(run)]
    return out


def _table(columns: tuple[str, ...], kept: tuple[str, ...], rows: list[list[Any]]) -> str:
    """The rows under `columns`, and under `kept` too when some row fills one of them (rows carry their
    cells either way: a table of one-request runs keeps the columns it had)."""
    width = 1 + len(columns)  # the round's number first
    if kept and any(cell not in ("", None) for row in rows for cell in row[width:]):
        return export.csv_text(("round", *columns, *kept), rows)
    return export.csv_text(("round", *columns), [row[:width] for row in rows])


def rounds(docs: list[Document]) -> str:
    """One row per run of each round, or several (a burst's per client count): the round, the run, and the
    figures its experiment names."""
    kind = find_repeated(docs[0].get("of", "")) if docs else None
    if kind is None:  # nothing to read (a checked file always names a repeatable experiment)
        return export.csv_text(("round",), [])
    return _table(kind.columns, kind.kept_columns, _numbered(docs, kind.rows))


def workers(docs: list[Document]) -> str:
    """One row per worker of each run of each round."""
    kind = find_repeated(docs[0].get("of", "")) if docs else None
    if kind is None:
        return export.csv_text(("round",), [])
    return _table(kind.worker_columns, kind.kept_worker_columns, _numbered(docs, kind.worker_rows))


def report(result: RepeatResult) -> RenderableType:
    return repeat_report(result)


REPEAT: Experiment[RepeatResult] = Experiment(
    kind="repeat",
    load=RepeatResult.from_dict,
    shape_of=lambda: REPEAT_SHAPE,
    report=report,
    figure=lazy("accept_order.experiments.repeat.plot", "repeat_figure"),
    tables={"rounds": rounds, "workers": workers},
)
