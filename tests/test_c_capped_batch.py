"""A cap on accepts per wakeup never strands queued connections, in any mode the cap applies to.

Found by experiments/latency_shared_vs_reuseport.py (accept-batch 1): `epoll-shared` registers the
socket edge-triggered, so a wakeup that stopped at the cap with connections still queued raised no new
edge, and those connections waited for the next one to arrive; the last ones of a run timed out.
"""

from __future__ import annotations

import sys

import pytest

from accept_order import api
from accept_order.core.spec import ConcurrentLoad
from accept_order.servers.modes import MODES

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll")


@LINUX_ONLY
@pytest.mark.parametrize("mode", [name for name, mode in MODES.items() if mode.batches])
def test_a_capped_batch_leaves_no_connection_behind(mode: str) -> None:
    if MODES[mode].unavailable():
        pytest.skip(MODES[mode].unavailable() or "")
    # 8 clients, 2 busy workers: the queue holds several connections at most wakeups, so the cap of 1
    # stops nearly every batch with more still waiting.
    server, load = api.split_options(
        dict(mode=mode, workers=2, connections=200, concurrency=8, work_us=200, accept_batch=1, timeout_s=2.0),
        ConcurrentLoad,
    )
    result = api.latency(server, load)
    assert (result.ok, result.errors) == (200, {})
    assert sum(c.accepts for c in result.counters) == 200
    assert all(c.max_batch <= 1 for c in result.counters)
