"""latency --repeat 5 that Ctrl-C cut to one round: 'Verdict: epoll has the lowest p99 in 1/1 runs, not
significantly lower than the other (t-test at 95%)' above 'one run each: significance cannot be tested'.
No t-test was run; the verdict says its significance is untested instead."""

from __future__ import annotations

from accept_order.analysis.stability import latency_stability
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.result import LatencyResult

ENV = Environment("Linux", "6.0", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")


def at(mode: str, p99_ms: float) -> LatencyResult:
    """A run of 100 connections whose p99 is p99_ms."""
    us = int(p99_ms * 1000)
    hist = LatencyHistogram()
    for value in [us // 2] * 50 + [us] * 49 + [us * 6 // 5]:
        hist.add(value)
    return LatencyResult(
        server=ServerSpec(mode=mode, workers=2).validated(),
        load=ConcurrentLoad(connections=100, concurrency=4).validated(),
        environment=ENV,
        port=1234,
        histogram=hist,
        errors={},
        served=(50, 50),
        counters=(WorkerCounters(0, 100, 5, 5, 0, 1), WorkerCounters(1, 101, 5, 5, 0, 1)),
        drivers=(DriverStats(0, 4, 100, 1.0, 0.2, 0.1),),
        wall_s=2.0,
    )


def test_one_round_names_no_t_test() -> None:
    verdict = latency_stability([[at("epoll", 5.4), at("reuseport", 9.4)]])
    assert verdict.text.startswith("epoll has the lowest p99 in 1/1 runs"), verdict.text
    assert "t-test" not in verdict.text and "not significantly" not in verdict.text, verdict.text
    assert "untested" in verdict.text and not verdict.conclusive
    assert verdict.pairs[0].endswith("one run each: significance cannot be tested")


def test_two_rounds_are_tested_as_before() -> None:
    verdict = latency_stability([[at("epoll", 5.4), at("reuseport", 9.4)], [at("epoll", 5.5), at("reuseport", 9.3)]])
    assert verdict.text.endswith("significantly lower than reuseport (t-test at 95%)"), verdict.text
