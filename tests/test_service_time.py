"""Service times measured by the built-in workers: the bounded histogram, what a run reports, the checks on
load, and merging."""

from __future__ import annotations

import json

import pytest

from accept_order import api
from accept_order.core.errors import ResultFileError
from accept_order.core.measures import WorkerCounters
from accept_order.core.service_time import ServiceTimes, bucket, merged, quantile_sample, width
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.results.merge import _add_counters
from accept_order.results.typed import build


def test_buckets_are_exact_below_128_and_under_1_6_percent_wide_above() -> None:
    assert [bucket(v) for v in (0, 1, 127)] == [0, 1, 127]
    for us in (128, 1000, 1063, 2047, 2048, 123_456, 10**9):
        lower = bucket(us)
        assert lower <= us < lower + width(lower)
        assert width(lower) / lower < 0.016
        assert bucket(lower) == lower
    times = ServiceTimes()
    for us in (1000, 1005, 50):
        times.add(us)
    assert times.pairs() == [(50, 1), (1000, 2)] and times.sum_us == 2055


def test_quantile_sample_spreads_through_the_distribution() -> None:
    pairs = [(1024, 3), (2048, 1)]  # buckets 16 and 32 µs wide
    assert quantile_sample(pairs, 4) == pytest.approx([1024 + 16 / 6, 1032, 1024 + 16 * 5 / 6, 2064])
    assert quantile_sample(pairs, 1000) == quantile_sample(pairs, 4)  # no more values than were counted
    assert len(quantile_sample([(1000, 10**6)], 4096)) == 4096
    assert quantile_sample([], 10) == []
    assert merged([[(5, 1), (7, 2)], [(5, 3)]]) == [(5, 4), (7, 2)]


def test_the_built_in_workers_time_every_connection() -> None:
    """Each connection's service includes the busy loop, which runs until --work-us have passed: no bucket
    can lie wholly below it, and the counts are the workers' accepts."""
    result = api.latency(
        ServerSpec(mode="blocking", workers=2, work_us=2000), ConcurrentLoad(connections=40, concurrency=2)
    )
    assert result.ok == 40
    for c in result.counters:
        assert sum(n for _, n in c.service_us) == c.accepts
        assert all(lower + width(lower) > 2000 for lower, _ in c.service_us)
        assert c.service_sum_us is not None and c.service_sum_us >= 2000 * (c.accepts or 0)
    assert type(result).from_dict(json.loads(json.dumps(result.to_dict()))).counters == result.counters


@pytest.mark.parametrize(
    ("service", "message"),
    [
        ({"service_us": [[1001, 1]]}, "service_us[0]: 1001 is not the next bucket's lower bound"),
        ({"service_us": [[1000, 1], [1000, 1]]}, "service_us[1]"),
        ({"service_us": [[1000, 0]]}, "service_us[0][1]: expected a positive integer"),
        ({"service_us": [[1000, 2]], "service_sum_us": 1000}, "service_sum_us: is 1000, outside"),
        ({"service_us": "1000"}, "service_us: expected a list"),
    ],
)
def test_malformed_service_times_are_refused_on_load(service: dict[str, object], message: str) -> None:
    with pytest.raises(ResultFileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build(WorkerCounters, {"index": 0, "pid": 1, **service})


def test_files_without_service_times_still_load_and_merge_adds_them() -> None:
    assert build(WorkerCounters, {"index": 0, "pid": 1}).service_us == ()
    a = [{"index": 0, "pid": 1, "service_us": [[1000, 2]], "service_sum_us": 2010}]
    b = [{"index": 0, "pid": 2, "service_us": [[1000, 1], [2048, 1]], "service_sum_us": 3050}]
    (one,) = _add_counters(a, b)
    assert one["service_us"] == [[1000, 3], [2048, 1]] and one["service_sum_us"] == 5060
    build(WorkerCounters, one)  # and the sum still checks
