"""An attached run whose kernel counts are bpftrace's last periodic reading, taken before the run ended (bpftrace
never ran its END block, probes/accepts.stop()): the accepts after that reading are in no count. The report's line
for the connections the per-worker table does not place blamed them on workers that were not attached ('were
accepted by processes that were not attached (workers started during the run ...)'), or on io_uring, where what is
missing is the end of the count itself. The result keeps how long before the end the reading was taken
(evidence.accept_counts.reading_before_s), `show` says it from the file, and `merge` keeps it from either file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from conftest import run_cli

from accept_order.experiments.documents import file_kinds
from accept_order.experiments.latency.attached_counts import THROUGH_IO_URING
from accept_order.experiments.latency.result import LatencyResult
from accept_order.results.merge import merge

DATA = Path(__file__).parent / "data"
FILE, SECOND = DATA / "review_rd_uwsgi_masterless_attach.json", DATA / "review_rd_uwsgi_masterless_attach_2.json"
SAID = "are not placed: the kernel's count stops at bpftrace's last reading, 0.80 s before the run ended"


def _attached(path: Path, before_s: float | None) -> dict[str, Any]:
    """A real attached uWSGI run whose master accepted none itself: 170 of its 300 connections placed."""
    doc = json.loads(path.read_text())
    kernel = doc["evidence"]["accept_counts"]
    kernel["master_accepted"], kernel["appeared"] = 0, {}
    if before_s is not None:
        kernel["reading_before_s"] = before_s
    return doc


def test_the_unplaced_are_the_counts_missing_end_not_other_workers(tmp_path: Path) -> None:
    short = tmp_path / "short.json"
    short.write_text(json.dumps(_attached(FILE, 0.8)))
    shown = run_cli(["show", str(short)], columns=400)
    assert shown.exit_code == 0, shown.output
    assert f"the table places 170 of the 300 connections served: the other 130 {SAID}" in shown.output
    blamed = (THROUGH_IO_URING, "not its child", "not attached")  # what _unplaced_why names
    assert not any(words in shown.output for words in blamed), shown.output
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(_attached(FILE, None)))
    shown = run_cli(["show", str(whole)], columns=400)  # END's counts: the line names what the count cannot see
    assert shown.exit_code == 0 and THROUGH_IO_URING in shown.output and "last reading" not in shown.output


def test_merge_keeps_a_short_count_from_either_file() -> None:
    for first, second in ((FILE, 0.8), (SECOND, None)), ((FILE, None), (SECOND, 0.8)):
        files = [("a", "latency", _attached(*first)), ("b", "latency", _attached(*second))]
        merged = LatencyResult.from_dict(merge(copy.deepcopy(files), file_kinds())[1])
        assert merged.evidence["accept_counts"]["reading_before_s"] == 0.8, merged.evidence["accept_counts"]
    both = [("a", "latency", _attached(FILE, None)), ("b", "latency", _attached(SECOND, None))]
    assert "reading_before_s" not in LatencyResult.from_dict(merge(both, file_kinds())[1]).evidence["accept_counts"]
