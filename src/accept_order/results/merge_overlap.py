"""Whether two result files hold one measurement between them, so that merging them would count it twice.

A file given twice, a copy of one, or a merge beside a file that went into it holds the other whole
(merge._holds). Two merges that share a file, (a + b) beside (b + c), hold neither the other, yet both hold b:
merging them added b's connections twice without a word. Such a pair shares a start (each run's own and those
its merged_from lists) and one of the load generator's drivers, whose figures (its requests, wall and CPU time,
run-queue wait in ns) no other measurement repeats; two files of different client hosts started in the same
second (--concurrent) share the start only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def starts(run: dict[str, Any]) -> set[Any]:
    """When the measurements in a run started: its own, and those of the files merged into it."""
    merged = run.get("evidence", {}).get("merged_from", {}).get("files", [])
    return {run["environment"].get("started_at")} | {source.get("started_at") for source in merged}


def _drivers(run: dict[str, Any]) -> set[str]:
    return {json.dumps(d, sort_keys=True) for d in run.get("drivers") or () if isinstance(d, dict)}


def shared_start(runs_a: Sequence[dict[str, Any]], runs_b: Sequence[dict[str, Any]]) -> str | None:
    """The start of a measurement both files hold (a run of each started then, with a driver of the same
    figures), where one of them is a merge; None where they hold none in common. Two files of one load each,
    neither holding the other, are two client hosts' (merge._holds)."""
    for run_a, run_b in zip(runs_a, runs_b, strict=False):
        if not any(run.get("evidence", {}).get("merged_from") for run in (run_a, run_b)):
            continue
        common = sorted(str(s) for s in (starts(run_a) & starts(run_b)) if s is not None)
        if common and _drivers(run_a) & _drivers(run_b):
            return common[0]
    return None
