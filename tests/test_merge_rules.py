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


def ran_on(loop: str | None, driver: str | None = None) -> dict[str, Any]:
    """The golden latency file (0.2's: drivers without a loop) as if its drivers ran `loop`, asked as `driver`."""
    document = latency()
    # another measurement each
    document["environment"]["started_at"] = f"2026-11-23T18:0{len(loop or '')}:0{len(driver or '')}+00:00"
    for d in document["drivers"]:
        if loop is not None:
            d["loop"] = loop
    if driver is not None:
        document["load"]["driver"] = driver
    return document


def test_files_whose_load_generator_ran_different_loops_are_not_one_load() -> None:
    """What ran is compared, not the --driver asked: auto ran io_uring here and epoll where it could not."""
    with pytest.raises(ResultFileError, match=r"\(run 1: the load generator ran on epoll vs io_uring\)$"):
        merge([("old", "latency", ran_on(None)), ("new", "latency", ran_on("io_uring"))], file_kinds())
    with pytest.raises(ResultFileError, match=r"ran on io_uring vs epoll\)$"):
        merge([("auto", "latency", ran_on("io_uring")), ("fell", "latency", ran_on("epoll"))], file_kinds())
    # the same loop, asked for in other words (0.2's file, --driver epoll; auto, --driver io_uring): one load
    merge([("old", "latency", ran_on(None)), ("asked", "latency", ran_on("epoll", "epoll"))], file_kinds())
    merge([("auto", "latency", ran_on("io_uring")), ("asked", "latency", ran_on("io_uring", "io_uring"))], file_kinds())
