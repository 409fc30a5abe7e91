"""merge: each file's own merged_from, kept in its entry of the merged one's, so that a merge of merged files still
names every run it adds.

A merged run's evidence is the first file's, and its merged_from names the files of the last merge only: ab.json
(a.json and b.json merged) merged with c.json read 2 runs where there were 3 (analysis/one_run.merged_runs: '2 runs
each, merged into one histogram'), and a merge of it beside b.json was not seen to hold b twice (merge_overlap.py
knew the starts of ab.json and c.json, not b's). Each entry now keeps the merged_from its file's run had, so the
count and the starts follow the merges down; a file merged before this (no entry holds one) reads as it did."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any


def nested_sources(
    index: int, documents: Sequence[tuple[str, str, Mapping[str, Any]]], sources: list[Any]
) -> list[Any]:
    """`sources` (merged_from's files, one per document) with each document's run `index`'s own merged_from, on
    those that were merged files themselves."""
    return [_with_own(source, _own(doc, index)) for source, (_, _, doc) in zip(sources, documents, strict=True)]


# Merges of merges kept this deep: each level nests a result file 3 deeper (merged_from, files, an entry), and a file
# nested past files.MAX_DEPTH (64) could not be read back; an entry at the deepest level keeps the count of runs its
# dropped merged_from held ('runs', which analysis/one_run.runs_in reads) and their starts ('starts', which
# merge_overlap.merged_starts reads), not their names
KEPT_LEVELS = 16


def _with_own(source: Any, own: Mapping[str, Any] | None) -> Any:
    if own is None or not isinstance(source, dict):
        return source
    return {**source, "merged_from": _pruned(copy.deepcopy(dict(own)), 1)}


def _pruned(merged: dict[str, Any], level: int) -> dict[str, Any]:
    """`merged` with its entries' own merged_from kept down to KEPT_LEVELS levels in all, dropped below, each dropped
    one's runs counted in its place: a running total merged with each day's file (merge total.json day.json) nests
    one level a day, and read 18 runs where there were 31 when the deepest levels counted one run a file, and took
    13 of those 31 days again without a word (their starts dropped with their entries)."""
    from ..analysis.one_run import runs_in
    from .merge_overlap import merged_starts

    for entry in merged.get("files") or ():
        below = entry.get("merged_from") if isinstance(entry, dict) else None
        if isinstance(below, dict) and level < KEPT_LEVELS:
            _pruned(below, level + 1)
        elif isinstance(entry, dict):
            if isinstance(below, dict):
                entry["runs"] = runs_in(below)
                entry["starts"] = sorted(s for s in merged_starts(below) if isinstance(s, str))
            entry.pop("merged_from", None)
    return merged


def _own(doc: Mapping[str, Any], index: int) -> Mapping[str, Any] | None:
    """The merged_from of a document's run `index` (the document itself for a kind of one run); None where it was
    not merged."""
    runs = doc.get("runs")
    run = runs[index] if isinstance(runs, list) and index < len(runs) else doc
    evidence = run.get("evidence") if isinstance(run, Mapping) else None
    own = evidence.get("merged_from") if isinstance(evidence, Mapping) else None
    return own if isinstance(own, Mapping) and isinstance(own.get("files"), list) else None
