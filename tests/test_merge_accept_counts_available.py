"""merge of two attached runs where the kernel's accepts were counted in one file's window only (bpftrace did not
attach in the other): the first file's counts were kept, or the two added, as the merged load's (an available count
of a fraction of its accepts). They are now 'not counted in every merged file', and the report says no count."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from accept_order.experiments.documents import file_kinds
from accept_order.experiments.latency.result import LatencyResult
from accept_order.results.merge import merge

DATA = Path(__file__).parent / "data"
FILE, SECOND = DATA / "review_rd_uwsgi_masterless_attach.json", DATA / "review_rd_uwsgi_masterless_attach_2.json"


def _merged(first: dict, second: dict) -> dict:
    merged = LatencyResult.from_dict(merge([("a", "latency", first), ("b", "latency", second)], file_kinds())[1])
    return merged.evidence["accept_counts"]


def test_counts_from_one_files_window_are_not_the_merged_loads() -> None:
    counted, other = json.loads(FILE.read_text()), json.loads(SECOND.read_text())
    uncounted = copy.deepcopy(other)
    uncounted["evidence"]["accept_counts"] = {"available": False, "why": "bpftrace is not installed", "counts": {}}
    for first, second in ((counted, uncounted), (uncounted, counted)):
        kernel = _merged(copy.deepcopy(first), copy.deepcopy(second))
        assert kernel == {"available": False, "why": "not counted in every merged file", "counts": {}}, kernel
    both = _merged(copy.deepcopy(counted), copy.deepcopy(other))
    assert both["available"] is True and both["master_accepted"] == 130 + 59
    also = copy.deepcopy(counted)
    also["evidence"]["accept_counts"] = dict(uncounted["evidence"]["accept_counts"])
    neither = _merged(also, copy.deepcopy(uncounted))
    assert neither["available"] is False and neither["why"] == "bpftrace is not installed"  # as each file said
