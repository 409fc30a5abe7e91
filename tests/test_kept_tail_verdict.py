"""One latency run over connections kept for its whole life says how they split and whether the tails follow.

`latency --server nginx -w 4 --pool -c 32 --requests-per-connection 0 --work 1ms --duration 5s` (Debian's nginx
1.22, load about 9 on 2 vCPUs): the kept table read accepted 17/13/1/1 and p99s of 352.25, 271.73, 36.44 and
37.54 ms, and the report had no verdict at all: the one-worker-holds-the-pool finding, and its long tail, were
left to the reader of the table (a `--modes` run says the split in its verdict: pool_split.py).
"""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console
from test_small_sentences_held_nothing import pool_run

from accept_order.core.histogram import LatencyHistogram
from accept_order.experiments.latency.kept_tail import kept_tail_verdict, tails_follow
from accept_order.experiments.latency.report import latency_report
from accept_order.experiments.latency.result import LatencyResult


def _with_tails(result: LatencyResult, p99_ms: tuple[float, ...]) -> LatencyResult:
    """Each worker's requests (100 a connection held, as pool_run serves them) at 1 ms, 2% of them at its p99."""
    histograms = []
    for served, p99 in zip(result.served, p99_ms, strict=True):
        hist = LatencyHistogram()
        if served:
            hist.add(1000, served * 98 // 100)
            hist.add(int(p99 * 1000), served - served * 98 // 100)
        histograms.append(hist)
    return dataclasses.replace(result, worker_histograms=tuple(histograms))


def _text(result: LatencyResult) -> str:
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(latency_report(result))
    return out.getvalue()


def test_a_lopsided_pool_whose_busiest_worker_has_the_longest_tail() -> None:
    run = _with_tails(pool_run("epoll", (17, 13, 1, 1), p99_us=300_000), (352.25, 271.73, 36.44, 37.54))
    said = kept_tail_verdict(run)
    assert said is not None
    assert said.startswith(
        "Verdict: worker 0 held 17 of the 32 connections kept for the whole run (53%; an even share is 25%): the "
        "split 17/13/1/1 (Jain 0.557 over them), uneven beyond chance (an even split spreads 32 at least this "
        "unevenly 1 time in 620,000, exact multinomial test)."
    ), said
    # the histogram's buckets give each p99 to within their width: the workers named, in order, with theirs
    assert "p99 per worker (connections held): worker 0 (17): 35" in said and "worker 3 (1): 3" in said, said
    assert "the tails follow the split: each worker that held more connections had the higher p99" in said, said
    assert "How sure: one run: its split is one draw of its 32 connections" in said
    assert said in " ".join(_text(run).split()), "the single run's report prints it"


def test_tails_that_run_against_or_across_the_split() -> None:
    against = kept_tail_verdict(_with_tails(pool_run("epoll", (17, 13, 1, 1), 3000), (20.0, 40.0, 300.0, 300.0)))
    assert against is not None and "the tails run against the split" in against, against
    part = kept_tail_verdict(_with_tails(pool_run("epoll", (17, 13, 1, 1), 3000), (300.0, 20.0, 100.0, 100.0)))
    assert part is not None and "the tails follow the split only in part (3 of 5 pairs" in part, part
    # a worker that held none has no p99, and two that held the same are not ranked against each other
    assert tails_follow([5, 5, 0], [10, 20, None]) == (0, 0)
    assert tails_follow([9, 5, 2], [30, 20, 10]) == (3, 0)


def test_an_even_split_is_said_as_chance_gives_it() -> None:
    said = kept_tail_verdict(_with_tails(pool_run("reuseport", (9, 8, 7, 8), 3000), (40.0, 38.0, 30.0, 36.0)))
    assert said is not None
    assert "the split 9/8/7/8 (Jain 0.992 over them), what an even split gives by chance" in said, said


def test_no_verdict_where_connections_came_and_went_or_one_worker_served() -> None:
    churn = pool_run("epoll", (17, 13, 1, 1), 3000, per_connection=100)
    assert kept_tail_verdict(_with_tails(churn, (352.25, 271.73, 36.44, 37.54))) is None
    assert "Verdict:" not in _text(_with_tails(churn, (352.25, 271.73, 36.44, 37.54)))


def test_a_pool_one_worker_held_or_whose_tails_nobody_timed() -> None:
    # envoy#33707's case: one worker held the whole pool; it was the case the verdict left out (no two p99s)
    alone = kept_tail_verdict(_with_tails(pool_run("epoll", (32, 0, 0, 0), 3000), (90.0, 0.0, 0.0, 0.0)))
    assert alone is not None and alone.startswith("Verdict: worker 0 held 32 of the 32 connections"), alone
    assert "Worker 0 alone held the pool: its p99 is the run's (" in alone, alone
    # an attached nginx whose replies name no worker (latency --attach ... --protocol http --pool -c 32): the
    # kernel's accepts split the pool 8/12/1/11, its log agreeing; nobody timed a worker's requests
    kernel = pool_run("attached", (8, 12, 1, 11), 3000)
    counted = dataclasses.replace(
        kernel, served=(8, 12, 1, 11), connections=(), evidence={"accept_counts": {"available": True}}
    )
    said = kept_tail_verdict(counted)
    assert (
        said is not None
        and "the split 8/12/1/11 (accepted, as the kernel counted; Jain 0.776 over them), uneven beyond chance" in said
    ), said
    assert "No worker's p99 is known: the replies do not name a worker" in said, said
    assert "each p99 rests" not in said, said


def test_workers_that_held_as_many_are_said_together() -> None:
    # HAProxy's multi-queue split a pool of 32 8/8/8/8 (its log agreeing): 'workers 0 and 1 and 2 and 3 held 8 each'
    even = kept_tail_verdict(_with_tails(pool_run("threads", (8, 8, 8, 8), 3000), (268.2, 265.3, 271.7, 273.5)))
    assert even is not None
    assert even.startswith("Verdict: the 4 workers held 8 each of the 32 connections kept for the whole run: "), even
    assert "each held as many: there is no split for the tails to follow" in even, even
    two = kept_tail_verdict(_with_tails(pool_run("epoll", (12, 12, 4, 4), 3000), (90.0, 80.0, 30.0, 30.0)))
    assert two is not None and two.startswith("Verdict: workers 0 and 1 held 12 each of the 32 connections"), two


def test_a_merge_of_runs_one_after_the_other_says_so() -> None:
    # two pools of 32 merged (accept-order merge a.json b.json) read 'one run: its split is one draw of its 64'
    run = _with_tails(pool_run("epoll", (34, 25, 3, 2), p99_us=3000), (333.7, 262.3, 58.5, 35.5))
    files = [{"file": "a.json"}, {"file": "b.json"}]
    merged = dataclasses.replace(run, evidence={**run.evidence, "merged_from": {"files": files}})
    said = kept_tail_verdict(merged)
    assert said is not None and "of the 64 connections kept for the whole of their runs" in said, said
    assert "How sure: 2 runs merged: its split adds 2 draws (64 connections in all)" in said, said
    at_once = {"files": files, "concurrent": True}  # several client hosts, one server: one run
    one = kept_tail_verdict(dataclasses.replace(run, evidence={**run.evidence, "merged_from": at_once}))
    assert one is not None and "How sure: one run: its split is one draw of its 64 connections" in one, one

    # a file without per-worker latencies (pool_run's own): the split, and that no p99 is known
    bare = kept_tail_verdict(pool_run("epoll", (20, 12, 0, 0), 3000))
    assert bare is not None and "No worker's p99 is known: the result keeps no latencies per worker." in bare, bare
    assert "alone held" not in bare, bare
