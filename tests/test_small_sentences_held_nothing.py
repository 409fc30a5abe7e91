"""The tails' verdict over a kept pool compared percentiles only: a pool of 8 over 4 workers where one worker
got no connection had the others carry its share, which the kept table showed and the verdict never said.
It says so now, where it matters to the tail (the busiest worker carried more than an even spread), from
the measurements when shown (a file saved before says it too)."""

from __future__ import annotations

import dataclasses
import json

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.experiment import compare_verdict, compare_verdicts
from accept_order.experiments.latency.held_nothing import held_nothing
from accept_order.experiments.latency.result import LatencyCompareResult, LatencyResult

ENV = Environment("Linux", "6.18", "x86_64", 2, 65536, "3.11", "host", "2026-11-27T00:00:00+00:00")


def pool_run(mode: str, held: tuple[int, ...], p99_us: int, per_connection: int = 0) -> LatencyResult:
    """A pool of sum(held) connections, worker w accepting held[w] (as their first replies said), each request
    served by the worker holding its connection (100 per connection held); 2% of the requests at p99_us."""
    served = tuple(100 * n for n in held)
    hist = LatencyHistogram()
    hist.add(1000, sum(served) * 98 // 100)
    hist.add(p99_us, sum(served) - sum(served) * 98 // 100)
    return LatencyResult(
        server=ServerSpec(mode=mode, workers=len(held)).validated(),
        load=ConcurrentLoad(
            connections=sum(served), concurrency=sum(held), requests_per_connection=per_connection, pool=True
        ),
        environment=ENV,
        port=8080,
        histogram=hist,
        errors={},
        served=served,
        counters=tuple(WorkerCounters(i, 1000 + i, accepts=n) for i, n in enumerate(held)),
        drivers=(DriverStats(0, sum(held), sum(served), 1.0, 0.2, 0.0),),
        wall_s=1.0,
        connections=held,
        held_at_end=held,
        pool=(sum(held), sum(held)),
    )


def test_a_worker_that_held_nothing_is_said_beside_the_tails() -> None:
    hashed = pool_run("reuseport", (3, 3, 2, 0), p99_us=9000)
    even = pool_run("fd-pass", (2, 2, 2, 2), p99_us=3000)
    verdict = compare_verdict(LatencyCompareResult(runs=(hashed, even)))
    assert verdict.text.startswith("fd-pass had the tightest tail of these runs"), verdict.text
    assert verdict.text.split(". How sure: ")[0].endswith(  # then how sure one run each is (analysis/one_run.py)
        "(reuseport: worker 3 held no connection, so the other 3 carried its share: the busiest held 3 of the "
        "8 connections, 2 on an even spread)"
    ), verdict.text
    assert "fd-pass:" not in verdict.text  # every worker held two
    # derived when saved and when shown: a file read back says the same
    saved = json.loads(json.dumps(LatencyCompareResult(runs=(hashed, even)).to_dict()))
    again = LatencyCompareResult.from_dict(saved)
    assert compare_verdicts(again)["verdict"]["text"] == verdict.text


def test_said_only_where_it_matters_to_the_tail() -> None:
    # 3 connections over 4 workers leave one out whatever the mode: the busiest held one, as evenly as can be
    assert held_nothing(pool_run("reuseport", (1, 1, 1, 0), p99_us=3000)) is None
    assert held_nothing(pool_run("reuseport", (2, 2, 2, 2), p99_us=3000)) is None
    two = held_nothing(pool_run("epoll", (21, 11, 0, 0), p99_us=3000))
    assert two == (
        "epoll: workers 2 and 3 held no connection, so the other 2 carried their share: the busiest held 21 of the "
        "32 connections, 8 on an even spread"
    )
    # connections of K > 1 requests come and go: what the others carried is the requests they served
    churn = held_nothing(pool_run("reuseport", (3, 3, 2, 0), p99_us=3000, per_connection=10))
    assert churn is not None and "the busiest served 300 of the 800 requests, 200 on an even spread" in churn
    one_each = dataclasses.replace(
        pool_run("reuseport", (3, 3, 2, 0), p99_us=3000), load=ConcurrentLoad(connections=800, concurrency=8)
    )
    assert held_nothing(one_each) is None  # one request per connection: nothing is held
