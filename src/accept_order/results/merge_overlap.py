"""Whether two result files hold one measurement between them, so that merging them would count it twice.

A file given twice, a copy of one, or a merge beside a file that went into it holds the other whole
(_holds). Two merges that share a file, (a + b) beside (b + c), hold neither the other, yet both hold b:
merging them added b's connections twice without a word. Such a pair shares a start (each run's own and those
its merged_from lists) and one of the load generator's drivers, whose figures (its requests, wall and CPU time,
run-queue wait in ns) no other measurement repeats; two files of different client hosts started in the same
second (--concurrent) share the start only. merge refuses such files here (check_counted_once), and a file given
twice under two names (check_distinct_files).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..analysis.one_run import NESTED_AT_MOST
from ..core.errors import ResultFileError


def starts(run: dict[str, Any]) -> set[Any]:
    """When the measurements in a run started: its own, and those of the files merged into it, down through each
    file's own merged_from (merge_nested.py: b's start in a merge of ab.json and c.json)."""
    return {run["environment"].get("started_at")} | merged_starts(run.get("evidence", {}).get("merged_from"))


def merged_starts(merged: Any, depth: int = 0) -> set[Any]:
    """The starts of every file a merged_from holds, down through the files' own, and those an entry kept in place of
    its merged_from where a merge deeper than merge_nested.KEPT_LEVELS dropped it ('starts')."""
    files = merged.get("files") if isinstance(merged, dict) else None
    if not isinstance(files, list) or depth > NESTED_AT_MOST:
        return set()
    found: set[Any] = set()
    for source in files:
        if isinstance(source, dict):
            found |= {source.get("started_at")} | merged_starts(source.get("merged_from"), depth + 1)
            kept = source.get("starts")
            found |= {s for s in kept if isinstance(s, str)} if isinstance(kept, list) else set()
    return found


def _drivers(run: dict[str, Any]) -> set[str]:
    return {json.dumps(d, sort_keys=True) for d in run.get("drivers") or () if isinstance(d, dict)}


def shared_start(runs_a: Sequence[dict[str, Any]], runs_b: Sequence[dict[str, Any]]) -> str | None:
    """The start of a measurement both files hold (a run of each started then, with a driver of the same
    figures), where one of them is a merge; None where they hold none in common. Two files of one load each,
    neither holding the other, are two client hosts' (_holds)."""
    for run_a, run_b in zip(runs_a, runs_b, strict=False):
        if not any(run.get("evidence", {}).get("merged_from") for run in (run_a, run_b)):
            continue
        common = sorted(str(s) for s in (starts(run_a) & starts(run_b)) if s is not None)
        if common and _drivers(run_a) & _drivers(run_b):
            return common[0]
    return None


def runs_of(several: bool, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A document's runs: those of a kind of several (`several`), or the document itself."""
    return list(doc["runs"]) if several else [doc]


def started_at(doc: dict[str, Any]) -> str | None:
    """When a document's (first) run started, as its environment says; None where it does not say."""
    run = doc["runs"][0] if "runs" in doc and doc["runs"] else doc
    env = run.get("environment") or {}
    return env.get("started_at") if isinstance(env, dict) else None


def check_distinct_files(paths: Sequence[str]) -> None:
    """ResultFileError when two of `paths` are one file (the same name twice, ./a and a, a link to it):
    merging it with itself would count every connection twice. Paths that cannot be read are left to
    the loading, which says why."""
    seen: dict[tuple[int, int], str] = {}
    for path in paths:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        first = seen.get((st.st_dev, st.st_ino))
        if first is not None:
            from ..core.text import escape_controls

            raise ResultFileError(
                f"{escape_controls(first)} and {escape_controls(path)} are the same file: merging a file with "
                "itself would count every connection twice"
            )
        seen[(st.st_dev, st.st_ino)] = path


def _counts(run: dict[str, Any]) -> tuple[Counter[int], Counter[str]]:
    return Counter({us: n for us, n in run["histogram"]["counts"]}), Counter(run.get("errors", {}))


def _holds(a: dict[str, Any], b: dict[str, Any], several: bool) -> bool:
    """Whether document `a` already holds `b`'s measurement: each run of `b` started when one that went
    into `a` did, and every sample and failure of `b` is in `a` (`a` is `b`, a copy of it, or a merge
    that `b` went into). Two measurements do not share both by chance."""
    runs_a, runs_b = runs_of(several, a), runs_of(several, b)
    if len(runs_a) != len(runs_b) or not runs_a:
        return False
    for run_a, run_b in zip(runs_a, runs_b, strict=True):
        if run_b["environment"].get("started_at") not in starts(run_a):
            return False
        (hist_a, errors_a), (hist_b, errors_b) = _counts(run_a), _counts(run_b)
        if hist_b - hist_a or errors_b - errors_a:  # Counter subtraction keeps what b has more of
            return False
    return True


def check_counted_once(documents: Sequence[tuple[str, str, dict[str, Any]]], several: bool) -> None:
    """ResultFileError when a measurement would be counted twice: one file is another, or is in it."""
    for i, (name, kind, doc) in enumerate(documents):
        for other, other_kind, earlier in documents[:i]:
            if other_kind != kind:
                continue  # refused as another experiment
            holds, held = _holds(earlier, doc, several), _holds(doc, earlier, several)
            shared = None if holds or held else shared_start(runs_of(several, earlier), runs_of(several, doc))
            if holds and held:
                what = f"{other} and {name} hold the same measurement"
            elif holds or held:
                what = (
                    f"{other} already holds {name}'s measurement"
                    if holds
                    else f"{name} already holds {other}'s measurement"
                )
            elif shared:
                what = f"{other} and {name} both hold one file's measurement"
            else:
                continue
            when = shared or started_at(doc) or "at an unknown time"
            raise ResultFileError(f"{what} (started {when}): merging would count it twice")
