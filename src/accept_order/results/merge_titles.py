"""merge: each file's title (latency --title, the question its run was made to answer) where the files' differ.

The title is not a setting of the server or the load, so files of different titles may add (two client hosts'
files named for their hosts, say); but kept from the first file alone, 'why A' headed a histogram that also held
the runs made to answer 'why B', and the second file's title was nowhere in the merged result. Where the titles
differ, the merged run's title names every one and each file in merged_from keeps its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

JOINED_BY = " + "
# What latency's default title (no --title) opens with: experiments/latency/result.default_title builds it from this.
# A default names the server's label, whose port changes with every start of a server, so two runs of one question
# against a restarted server would read as two questions: defaults alone are not the files' own questions.
DEFAULT_TITLE_OPENING = "Duration in ms ("


def titled_sources(
    run: dict[str, Any], index: int, documents: Sequence[tuple[str, str, Mapping[str, Any]]], sources: list[Any]
) -> list[Any]:
    """`sources` (merged_from's files, one per document) with each document's title of run `index` where they
    differ, the merged `run`'s title then every distinct one (in the files' order); `sources` as they are where
    every file has the same title, or none was given (--title): defaults that differ by the server's port."""
    titles = [_title(doc, index) for _, _, doc in documents]
    if len(set(titles)) < 2 or all(title.startswith(DEFAULT_TITLE_OPENING) for title in titles):
        return sources
    run["title"] = JOINED_BY.join(dict.fromkeys(title for title in titles if title))
    return [{**source, "title": title} for source, title in zip(sources, titles, strict=True)]


def _title(doc: Mapping[str, Any], index: int) -> str:
    """A file's title of its run `index` ("" where it has none: a file from before titles were kept)."""
    runs = doc.get("runs")
    run = runs[index] if isinstance(runs, list) else doc
    title = run.get("title") if isinstance(run, Mapping) else None
    return title if isinstance(title, str) else ""
