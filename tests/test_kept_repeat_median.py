"""--repeat's 'kept connections over the runs' table gives the median of its rounds as the repeat table above it does.

'latency --server nginx -w 2 --modes epoll --pool -c 8 --requests-per-connection 0 --duration 2s --repeat 2' (load 4,
Linux 6.18.44, 2 vCPUs) printed p99 27.97 (23.36-32.59) ms in the repeat table, the median of its two rounds, and 32.59
ms in the kept table under it, also called a median, which took the upper of the two middle values (and Jain 1.000,
the higher round's 0.9998, where the two were 0.9998 and 0.9974). Of an even number of runs the median is the mean of
the middle two (analysis/stability.py); here the kept table and the repeat's note on its splits take it so."""

from __future__ import annotations

import statistics

from conftest import printed_like_the_report
from test_small_sentences_held_nothing import pool_run

from accept_order.analysis.fairness import jain_index
from accept_order.experiments.latency.kept_compare import kept_repeat_table
from accept_order.experiments.latency.pool_split import repeated_split_note
from accept_order.render.fit import fitted

# two rounds of one mode: the connections each worker held, and the p99 each round read
ROUNDS = (((6, 2), 20_000), ((7, 1), 40_000))


def _runs() -> list:
    return [pool_run("epoll", held, p99) for held, p99 in ROUNDS]


def test_the_kept_tables_median_of_two_rounds_is_their_mean() -> None:
    runs = _runs()
    table = kept_repeat_table({"epoll": runs})
    assert table is not None
    printed = printed_like_the_report(fitted(table), 120, color=False)
    row = next(line for line in printed.splitlines() if line.lstrip().startswith("epoll"))
    p99 = statistics.median(r.histogram.percentile(99.0) for r in runs) / 1000
    jain = statistics.median(jain_index(r.served) for r in runs)
    assert f" {p99:.2f} " in f"{row} ", (p99, printed)
    assert f" {jain:.3f} " in row, (jain, printed)
    assert " 40.00 " not in f"{row} ", printed  # the upper round's, as before


def test_the_splits_note_takes_the_same_median() -> None:
    runs = _runs()
    other = [pool_run("reuseport", held, p99) for held, p99 in (((4, 4), 20_000), ((5, 3), 20_000))]
    note = repeated_split_note({"epoll": runs, "reuseport": other})
    jain = statistics.median(jain_index(held) for held, _ in ROUNDS)
    assert "epoll uneven beyond chance" in note and f"(median Jain {jain:.3f} over its connections)" in note, note
