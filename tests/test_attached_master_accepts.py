"""Review RD of de0884a: where the attached master's own accepts are counted (accept_counts.master_accepted), the
report said it 'hands each to a worker over a Unix socket (fd-pass, as Node's cluster does)' whatever its children
did. uWSGI without --master (pyuwsgi 2.0, 3 processes, latency --attach PARENT --protocol http -n 300) is a parent
that accepts and serves as a worker beside its two children: the kernel counted 130 for it and 127 + 43 for them,
and the report said the parent passed the connections on. Where the children accepted too it now says the master
serves as a worker too; the fd-pass sentence stays for a master whose workers accepted none (Node's primary).

The file is that run's (tests/data/review_rd_uwsgi_masterless_attach.json); the witnesses of the run were /proc
(the parent and both children hold the listener; no Unix socket between them) and the kernel's count per pid."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from accept_order.experiments.latency.attached_counts import served_known, unplaced_text
from accept_order.experiments.latency.result import LatencyResult

FILE = Path(__file__).parent / "data" / "review_rd_uwsgi_masterless_attach.json"


def _result() -> LatencyResult:
    return LatencyResult.from_dict(json.loads(FILE.read_text()))


def test_a_master_that_accepts_beside_its_children_is_said_a_worker_too() -> None:
    result = _result()
    said = unplaced_text(result)
    assert said is not None
    assert "fd-pass" not in said.plain and "hands each" not in said.plain
    assert "accepted 130 connections itself" in said.plain and "beside the 170 its children accepted" in said.plain
    assert served_known(result) == (127, 43)  # the children's own counts stand


def test_a_master_whose_workers_accepted_none_still_passes_them_on() -> None:
    result = _result()
    passed = dataclasses.replace(result, served=(0, 0))
    said = unplaced_text(passed)
    assert said is not None and "fd-pass" in said.plain
    assert served_known(passed) is None


def test_a_pool_handed_over_by_the_master_is_not_said_accepted_by_no_worker() -> None:
    """latency --attach PRIMARY --protocol http --pool --requests-per-connection 0 of a Node cluster (Debian's
    nodejs, SCHED_RR, 2 workers; test_attach_node_primary_accepts' script): the kept table's 'accepted' read 0 and 0
    (the kernel's count per worker) for workers that held the 4 connections the primary handed them and answered
    162 and 238 of the 400 requests (their own log). Which worker took which is not known: '-'."""
    from accept_order.experiments.latency.kept_report import accepted

    result = LatencyResult.from_dict(json.loads((FILE.parent / "review_rd_node_pool_attach.json").read_text()))
    assert result.evidence["accept_counts"]["master_accepted"] == 4 and result.served == (0, 0)
    assert accepted(result) is None


def test_a_merge_adds_the_masters_own_accepts() -> None:
    """Two runs of the same attach (130 and 59 accepted by the master; its children 127 + 43, then 83 + 58): merge
    added `served` and kept the first file's kernel counts, and said the master accepted 130 beside 311."""
    from accept_order.experiments.documents import file_kinds
    from accept_order.results.merge import merge

    second = json.loads((FILE.parent / "review_rd_uwsgi_masterless_attach_2.json").read_text())
    files = [("a", "latency", json.loads(FILE.read_text())), ("b", "latency", second)]
    merged = LatencyResult.from_dict(merge(files, file_kinds())[1])
    kernel = merged.evidence["accept_counts"]
    assert merged.served == (210, 101)
    assert kernel["master_accepted"] == 130 + 59
    assert kernel["counts"] == {"20147": 127 + 83, "20148": 43 + 58}
    said = unplaced_text(merged)
    assert said is not None and "accepted 189 connections itself" in said.plain, said
