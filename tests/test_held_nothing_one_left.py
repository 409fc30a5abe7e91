"""The sentence for a kept pool that left a worker without connections reads as words and one number format.

`latency --requests-per-connection 10 -c 32 --modes epoll,reuseport,io-uring -n 10000` ended its verdict with
'(io-uring: worker 1 held no connection, so the other 1 carried its share: the busiest served 10,000 of the 10000
requests, 5,000 on an even spread)': 'the other 1', and one count grouped beside one not.
"""

from __future__ import annotations

from test_small_sentences_held_nothing import pool_run

from accept_order.experiments.latency.held_nothing import held_nothing


def test_one_worker_left_is_the_other_worker_and_counts_are_grouped() -> None:
    said = held_nothing(pool_run("io-uring", (32, 0), p99_us=3000, per_connection=10))
    assert said == (
        "io-uring: worker 1 held no connection, so the other worker carried its share: the busiest served 3,200 of "
        "the 3,200 requests, 1,600 on an even spread"
    )
