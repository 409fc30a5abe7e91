"""observe's headline over a single connection said 'took 100% of 1 connections' (and a lone worker 'took all 1
connections'): one connection is said in the singular, traced or sampled; two and more as before."""

from __future__ import annotations

import pytest
from observe_result_made import result

from accept_order.experiments.observe.verdict import headline


@pytest.mark.parametrize("traced", [True, False])
def test_one_connection_is_one(traced: bool) -> None:
    seen = "" if traced else " seen (sampled)"
    several = headline(result([1, 0, 0], traced=traced))
    assert f"100% of 1 connection{seen}; an even share is 33%" in several, several
    alone = headline(result([1], traced=traced))
    assert alone == f"its one worker (pid 100) took 1 connection{seen}", alone
    assert headline(result([2], traced=traced)) == f"its one worker (pid 100) took all 2 connections{seen}"
