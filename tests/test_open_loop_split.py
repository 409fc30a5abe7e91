"""An open loop's connections are shared among its driver processes as its rate is (by their slots), so each
driver ends when the others do: the rate offered holds to the end of the run, not only while every driver
still has connections left (0.3's first cut split the rate by slots and the connections evenly)."""

from __future__ import annotations

import pytest

from accept_order.core.spec import ConcurrentLoad
from accept_order.core.target import ReplyAttribution
from accept_order.loads.generator import LoadGenerator, in_proportion


@pytest.mark.parametrize(("connections", "concurrency", "procs"), [(10, 5, 2), (1000, 7, 3), (3, 3, 2), (999, 50, 4)])
def test_each_driver_gets_the_connections_its_rate_needs(connections: int, concurrency: int, procs: int) -> None:
    rate = 500.0
    load = ConcurrentLoad(connections=connections, rate=rate, concurrency=concurrency, driver_procs=procs)
    configs = LoadGenerator(("127.0.0.1", 9), ReplyAttribution(()), load).configs  # not started: no processes
    shares = [c.requests or 0 for c in configs]
    rates = [c.rate or 0.0 for c in configs]
    assert sum(shares) == connections and sum(rates) == pytest.approx(rate)
    ends = [n / r for n, r in zip(shares, rates, strict=True)]  # when each would finish, seconds
    assert max(ends) - min(ends) <= 1 / min(rates) + 1e-9, (shares, rates)  # within one arrival of each other


def test_a_closed_loop_still_splits_them_evenly() -> None:
    load = ConcurrentLoad(connections=10, concurrency=5, driver_procs=2)
    assert [c.requests for c in LoadGenerator(("127.0.0.1", 9), ReplyAttribution(()), load).configs] == [5, 5]


@pytest.mark.parametrize(("total", "weights"), [(10, [3, 2]), (7, [2, 1]), (5, [1, 1, 1]), (0, [2, 3]), (1, [1, 9])])
def test_in_proportion_adds_up_and_stays_within_one_of_the_exact_share(total: int, weights: list[int]) -> None:
    shares = in_proportion(total, weights)
    assert sum(shares) == total
    assert all(abs(n - total * w / sum(weights)) < 1 for n, w in zip(shares, weights, strict=True)), shares
