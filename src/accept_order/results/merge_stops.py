"""merge: each file's own reason for stopping early, where any of the files' runs stopped early.

A merged run is interrupted where any file's was, and its evidence is the first file's: merged after a file that
ran to its end, an attached worker's exit in the second read 'Interrupted: the attached pid 15320 run was stopped
after 1.12 s' (a signal's words, of the added wall time), and merged before one, its 'the run stopped after 0
connections' stood for a load the other file added to. Each stopped file in merged_from keeps its own reason,
which the report names beside the file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def stopped_sources(
    index: int, documents: Sequence[tuple[str, str, Mapping[str, Any]]], sources: list[Any]
) -> list[Any]:
    """`sources` (merged_from's files, one per document) with why each document's run `index` stopped early, on
    those that did, where any did; `sources` as they are where every file's ran to its end."""
    stops = [_stopped(doc, index) for _, _, doc in documents]
    if not any(stops):
        return sources
    return [{**source, "stopped": why} if why else source for source, why in zip(sources, stops, strict=True)]


def _stopped(doc: Mapping[str, Any], index: int) -> str:
    """Why a file's run `index` stopped early: an attached worker's exit as its file says it, else a signal's
    interruption after its time; "" for a run that ran to its end."""
    runs = doc.get("runs")
    run = runs[index] if isinstance(runs, list) else doc
    if not isinstance(run, Mapping) or not run.get("interrupted"):
        return ""
    evidence = run.get("evidence")
    exited = evidence.get("worker_exit") if isinstance(evidence, Mapping) else None
    if isinstance(exited, Mapping) and isinstance(exited.get("why"), str):
        return str(exited["why"])
    wall = run.get("wall_s")
    return f"interrupted after {wall:.2f} s" if isinstance(wall, int | float) else "interrupted"
