"""What merge must add and what it must refuse, on documents made from the golden latency run: a largest
batch is the largest of the two (a per-wakeup maximum does not add), and a measurement is counted twice
only when every sample and every failure of one file is in the other."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from accept_order.core.errors import ResultFileError
from accept_order.experiments.documents import file_kinds
from accept_order.results.merge import merge

GOLDEN = Path(__file__).parent / "data" / "golden"


def latency() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((GOLDEN / "latency.json").read_text())
    return document


def test_the_largest_batch_is_the_larger_of_the_two_and_accepts_add() -> None:
    a, b = latency(), latency()
    b["environment"]["started_at"] = "2026-11-23T18:05:00+00:00"  # another measurement
    a["counters"][0].update(max_batch=3, accepts=10)
    b["counters"][0].update(max_batch=5, accepts=7)
    _, merged = merge([("a", "latency", a), ("b", "latency", b)], file_kinds())
    first = merged["counters"][0]
    assert first["max_batch"] == 5  # not 8: one wakeup took at most 5, in either run
    assert first["accepts"] == 17


def with_failures(document: dict[str, Any], n: int) -> dict[str, Any]:
    failed = copy.deepcopy(document)
    failed["errors"] = {"ETIMEDOUT": n}
    return failed


def test_a_file_with_failures_the_other_lacks_is_not_the_same_measurement() -> None:
    """Same start, same samples: the file that also holds 3 failures holds the other, not the reverse."""
    plain = latency()
    failed = with_failures(plain, 3)
    with pytest.raises(ResultFileError, match=r"^failed already holds plain's measurement \(started "):
        merge([("plain", "latency", plain), ("failed", "latency", failed)], file_kinds())
    with pytest.raises(ResultFileError, match=r"^failed already holds plain's measurement"):
        merge([("failed", "latency", failed), ("plain", "latency", plain)], file_kinds())
    with pytest.raises(ResultFileError, match=r"^plain and copy hold the same measurement"):
        merge([("plain", "latency", plain), ("copy", "latency", latency())], file_kinds())


def test_files_that_each_hold_failures_the_other_lacks_both_count() -> None:
    """Same start and samples, but 3 failures in one and 2 other ones in the other: neither holds the
    other, so they are added (two client hosts that both saw the same served set are not a copy)."""
    three = with_failures(latency(), 3)
    other = latency()
    other["errors"] = {"ECONNRESET": 2}
    _, merged = merge([("three", "latency", three), ("other", "latency", other)], file_kinds())
    assert merged["errors"] == {"ETIMEDOUT": 3, "ECONNRESET": 2}
