"""A pool's verdict says how often chance ranks the workers' tails as closely with the split (analysis/tail_ranks.py).

'latency --server nginx -w 4 --pool -c 32 --requests-per-connection 0 --work 1ms --duration 4s' read 'the tails
follow the split: each worker that held more connections had the higher p99' of 17/12/2/1 and p99s 261/167/43/28
ms with no figure; 4 workers can be ranked 24 ways, so p99s dealt at random rank so 1 time in 24, and 2 workers
(one pair) half the time, which read the same. Pairs whose p99s tie were said as 'each ... had the higher p99'.
"""

from __future__ import annotations

import dataclasses
import math
from itertools import permutations

from test_kept_tail_verdict import _with_tails
from test_small_sentences_held_nothing import pool_run

from accept_order.analysis.tail_ranks import EXACT_WORKERS_MAX, kendall_s, rank_chance
from accept_order.experiments.latency.kept_tail import kept_tail_verdict


def test_the_chance_of_a_ranking_by_hand() -> None:
    assert rank_chance([17, 13], [3.0, 1.0]) == (0.5, "exact permutation")  # one pair: either order, half each
    assert rank_chance([17, 12, 2, 1], [261, 167, 43, 28]) == (1 / 24, "exact permutation")  # the one order of 24
    assert rank_chance([17, 12, 2, 1], [28, 43, 167, 261]) == (1 / 24, "exact permutation")  # against: its side
    # 5 of 6 pairs (S = 4): the 24 orders' S are 6 once, 4 three times, so 4 of 24 at least as close
    assert rank_chance([17, 11, 3, 1], [300, 400, 50, 20]) == (4 / 24, "exact permutation")
    assert rank_chance([5, 5], [10, 20]) == (1.0, "none")  # nothing ranked
    # held tied (two workers at 1): the orders with repeated values, counted as a permutation test counts them
    xs, ys = [17, 13, 1, 1], [352, 271, 36, 37]
    assert kendall_s(xs, ys) == 5
    assert rank_chance(xs, ys)[0] == sum(kendall_s(xs, o) >= 5 for o in permutations(ys)) / 24 == 2 / 24


def test_many_workers_by_the_normal_approximation() -> None:
    n = EXACT_WORKERS_MAX + 1
    p, test = rank_chance(list(range(n)), list(range(n)))
    assert test == "Kendall's normal approximation"
    variance = n * (n - 1) * (2 * n + 5) / 18  # no ties
    s = n * (n - 1) // 2
    assert math.isclose(p, 0.5 * math.erfc((s - 1) / math.sqrt(variance) / math.sqrt(2)))
    assert p < 0.01 and p > 1 / math.factorial(n)  # conservative against the exact 1 in 40,320


def test_the_verdict_says_how_often_chance_ranks_so() -> None:
    four = kept_tail_verdict(_with_tails(pool_run("epoll", (17, 12, 2, 1), 3000), (261.0, 167.0, 43.0, 28.0)))
    assert four is not None
    assert (
        "each worker that held more connections had the higher p99; p99s dealt to these 4 workers at random rank "
        "with the split as closely 1 time in 24 (exact permutation test), so the order alone is not beyond chance."
    ) in four, four
    two = kept_tail_verdict(_with_tails(pool_run("epoll", (20, 12), 3000), (90.0, 30.0)))
    assert two is not None and "2 workers at random rank with the split as closely half the time or more" in two, two
    seven = (12, 10, 8, 6, 4, 2, 1)
    many = kept_tail_verdict(_with_tails(pool_run("epoll", seven, 3000), (300.0, 250, 200, 150, 100, 50, 20)))
    assert (
        many is not None
        and "as closely 1 time in 5,000 (exact permutation test), so the order is beyond chance." in many
    ), many


def test_tied_p99s_are_not_said_higher() -> None:
    # workers 0 and 1 held 17 and 13 and their p99s fall in one bucket: not 'each ... had the higher p99'
    tied = kept_tail_verdict(_with_tails(pool_run("epoll", (17, 13, 1, 1), 3000), (300.0, 300.0, 30.0, 31.0)))
    assert tied is not None and "each worker that held more" not in tied, tied
    assert (
        "only in part (4 of 5 pairs of workers have the higher p99 where they held more, 0 the lower, 1 the same)"
        in (tied)
    ), tied


def test_a_merge_says_its_rows_add_by_index() -> None:
    run = _with_tails(pool_run("epoll", (18, 14, 14, 18), 3000), (200.0, 150.0, 150.0, 200.0))
    files = [{"file": "a.json"}, {"file": "b.json"}]
    merged = kept_tail_verdict(dataclasses.replace(run, evidence={**run.evidence, "merged_from": {"files": files}}))
    assert merged is not None
    assert "a busiest worker at another index in another run evens the sum" in merged, merged


def test_a_merge_of_a_merged_file_counts_every_run() -> None:
    # merge ab.json (two pools of 32 merged) c.json: merged_from names 2 files, the pools add to 96 of -c 32
    run = _with_tails(pool_run("epoll", (40, 30, 16, 10), 3000), (300.0, 250.0, 90.0, 60.0))
    files = [{"file": "ab.json"}, {"file": "c.json"}]
    load = dataclasses.replace(run.load, concurrency=32)
    nested = dataclasses.replace(run, load=load, evidence={**run.evidence, "merged_from": {"files": files}})
    said = kept_tail_verdict(nested)
    assert said is not None and "How sure: 3 runs merged: its split adds 3 draws (96 connections in all)" in said, said
