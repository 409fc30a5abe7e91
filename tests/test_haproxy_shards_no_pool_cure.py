"""inspect's row for HAProxy's shards (a bind per thread) says a hash spreads a pool less evenly than the default.

The table 'What changes how the load of long-lived connections splits (haproxy)', shown for a HAProxy whose threads
share one bind, offered `bind ADDRESS:PORT thread T (one per thread)` with a hash's 'spread about evenly, with
chance's spread', as if it were the cure for a pool one thread holds most of. The tool's own side-by-side, the
row's command, 'latency --server haproxy -w 4 --modes threads,shards --pool -c 32 --requests-per-connection 0
--repeat 4', split the pool 8 8 8 8 in 4 of 4 runs with threads (multi-queue: each accepted connection to the less
loaded of two threads) and 12 8 7 5, 12 9 7 4, 11 9 8 4 and 9 9 7 7 with shards, HAProxy's log agreeing each time.
The row says so now; the threads' own row (multi-queue) is the one /proc shows set, and stays out."""

from __future__ import annotations

from accept_order.servers.registry import KINDS


def test_the_shards_row_says_the_shared_bind_spreads_a_pool_more_evenly() -> None:
    rows = {cure.setting: cure for cure in KINDS["haproxy"].cures}
    shards = rows["bind ADDRESS:PORT thread T (one per thread)"]
    assert shards.mode == "shards"
    assert "a pool is spread by count, more evenly than a hash spreads it" in shards.what, shards.what
    assert rows["tune.listener.multi-queue on"].mode == "threads"
