"""LoadSummary: the one summary of a load that every experiment's result is built from and merge adds."""

from __future__ import annotations

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.load_summary import LoadSummary
from accept_order.core.measures import DriverStats


def summary(durations: list[int], errors: dict[str, int], served: tuple[int, ...], wall_s: float) -> LoadSummary:
    histogram = LatencyHistogram()
    for us in durations:
        histogram.add(us)
    driver = DriverStats(index=0, slots=1, requests=len(durations) + sum(errors.values()), wall_s=wall_s, cpu_s=0.1)
    return LoadSummary(histogram, errors, served, wall_s, (driver,))


def test_extend_adds_every_count_and_keeps_every_driver() -> None:
    a = summary([100, 200, 300], {"ECONNRESET": 1}, (2, 1), 1.0)
    b = summary([400], {"ECONNRESET": 2, "timeout": 1}, (0, 0, 1), 3.0)
    both = a.extend(b)
    assert both.ok == 4 and both.failed == 4 and both.driven == 8
    assert dict(both.errors) == {"ECONNRESET": 3, "timeout": 1}
    assert both.served == (2, 1, 1)  # a worker only the second load saw still counts
    assert both.percentile_us(100) == 400 and both.max_us == 400
    assert len(both.drivers) == 2
    assert both.wall_s == 4.0  # one after the other: the time adds
    assert a.extend(b, concurrent=True).wall_s == 3.0  # at the same moment: the longest


def test_extend_leaves_both_summaries_as_they_were() -> None:
    a = summary([100], {}, (1,), 1.0)
    b = summary([200], {}, (1,), 1.0)
    a.extend(b)
    assert a.ok == 1 and b.ok == 1 and a.histogram.count == 1


def test_a_summary_round_trips_through_a_latency_run_document() -> None:
    a = summary([100, 250], {"EPIPE": 1}, (1, 1), 2.5)
    again = LoadSummary.from_dict(a.to_dict())
    assert again == a


def test_nothing_served_has_no_percentile_and_no_throughput() -> None:
    empty = summary([], {"ECONNREFUSED": 3}, (0, 0), 0.0)
    assert empty.percentile_us(50) is None and empty.throughput == 0.0 and empty.driven == 3
