"""merge reads each file's load at the concurrency it ran at, as show does (d61f804: no more at once than its
connections). A file from before that kept -c as given ('-n 20' beside the default -c 200 saved 200; 20 ran):
beside a newer file of the same command, merge refused 'concurrency 20 vs 200' though show read both as 20; two
older ones merged into 40 connections beside 200, which read back as 40 at once where each ran 20."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from accept_order.core.errors import ResultFileError
from accept_order.core.spec import ConcurrentLoad
from accept_order.experiments.documents import file_kinds
from accept_order.results.merge import merge

GOLDEN = Path(__file__).parent / "data" / "golden"


def ran(concurrency: int, started: str) -> dict[str, Any]:
    """The golden run (200 connections) as one of 200 connections saved with `concurrency`, started `started`."""
    document: dict[str, Any] = json.loads((GOLDEN / "latency.json").read_text())
    document["load"]["concurrency"] = concurrency
    document["environment"]["started_at"] = started
    return document


def test_an_older_file_and_a_newer_of_the_same_command_merge() -> None:
    older, newer = ran(500, "2026-11-23T18:00:56+00:00"), ran(200, "2026-11-23T18:05:00+00:00")
    given = copy.deepcopy(older)
    _, merged = merge([("old", "latency", older), ("new", "latency", newer)], file_kinds())
    assert merged["load"]["connections"] == 400
    assert merged["load"]["concurrency"] == 200  # what each ran at once
    assert older == given  # the documents given are read, not changed


def test_two_older_files_merged_say_what_each_ran_not_their_sum() -> None:
    a, b = ran(500, "2026-11-23T18:00:56+00:00"), ran(500, "2026-11-23T18:05:00+00:00")
    _, merged = merge([("a", "latency", a), ("b", "latency", b)], file_kinds())
    # 200 at once in each; read back, 500 beside 400 connections would have been cut to 400
    assert ConcurrentLoad.from_dict(merged["load"]).concurrency == 200


def test_loads_that_ran_at_different_concurrencies_stay_apart() -> None:
    a, b = ran(4, "2026-11-23T18:00:56+00:00"), ran(500, "2026-11-23T18:05:00+00:00")
    with pytest.raises(ResultFileError, match="concurrency 4 vs 200"):
        merge([("a", "latency", a), ("b", "latency", b)], file_kinds())
