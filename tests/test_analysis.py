"""Pure analysis on hand-made records: tally, fairness, rotation, which idle-order model fits, verdict."""

from __future__ import annotations

import pytest

from accept_order.analysis import fairness, herd, order
from accept_order.core.measures import ConnectionRecord, WorkerCounters


def sequential(workers: list[int | None], latency_us: int = 100, gap_us: int = 1000) -> list[ConnectionRecord]:
    """Records of connections driven one after the other (each done before the next starts)."""
    return [
        ConnectionRecord(
            seq=i,
            worker=w,
            pid=None if w is None else 1000 + w,
            start_us=i * gap_us,
            latency_us=latency_us,
            error=None if w is not None else "closed without a reply",
        )
        for i, w in enumerate(workers)
    ]


def test_tally_counts_every_worker_including_idle_ones() -> None:
    assert fairness.tally([0, 2, 2, 0, 2], 4) == [2, 0, 3, 0]
    assert fairness.tally([], 3) == [0, 0, 0]


def test_jain_index_bounds() -> None:
    assert fairness.jain_index([2, 2, 2]) == pytest.approx(1.0)
    assert fairness.jain_index([6, 0, 0]) == pytest.approx(1 / 3)
    assert fairness.jain_index([1, 2]) == pytest.approx(9 / 10)
    assert fairness.jain_index([0, 0, 0]) == 1.0  # nothing served: nothing unfair yet


def test_max_min_share() -> None:
    assert fairness.max_min_share([3, 1, 2]) == pytest.approx(3.0)
    assert fairness.max_min_share([2, 2]) == pytest.approx(1.0)
    assert fairness.max_min_share([6, 0, 0]) is None  # some worker starved: infinitely unfair
    assert fairness.max_min_share([]) is None


@pytest.mark.parametrize(
    ("sequence", "workers", "expected"),
    [
        ([0, 1, 2, 0, 1, 2], 3, True),
        ([2, 0, 1, 2, 0, 1], 3, True),  # the start may be any worker
        ([1, 0, 2, 1, 0, 2], 3, True),  # any order, as long as it repeats
        ([0, 1, 2, 2, 1, 0], 3, False),
        ([0, 0, 0, 0, 0, 0], 3, False),
        ([0, 1, 2, 0, 2, 1], 3, False),
        ([0, 1], 3, True),  # shorter than one round: all distinct
        ([0, 0], 3, False),
        ([], 3, True),
        ([0, 0, 0], 1, True),  # one worker: a rotation of one
    ],
)
def test_is_rotation(sequence: list[int], workers: int, expected: bool) -> None:
    assert order.is_rotation(sequence, workers) is expected


def test_model_fits_on_sequential_rotation() -> None:
    fits = order.model_fits(sequential([0, 1, 2, 0, 1, 2]), 3)
    assert fits["fifo"] == (6, 6)
    # First-registered and LIFO predict worker 0 and the last server: they fit only by coincidence.
    assert fits["first-registered"][0] == 2
    assert fits["lifo"] == (0, 6)


def test_a_rotation_that_starts_at_any_worker_is_fifo() -> None:
    """The order the workers first queued in is not known (uWSGI's thunder lock queues them as they reach
    it): after each one's first turn, FIFO must keep the rotation; a worker taking all never fits it."""
    fits = order.model_fits(sequential([1, 2, 0] * 4), 3)
    assert fits["fifo"] == (12, 12)
    assert fits["round-robin"][0] < 12
    v = order.verdict(sequential([1, 2, 0] * 4), 3, "fifo", "why")
    assert v.pattern.startswith("rotation") and v.expected
    assert order.model_fits(sequential([1] * 6), 3)["fifo"] == (1, 6)  # only its first turn fits
    assert order.model_fits(sequential([1, 0, 1, 0, 1, 0]), 3)["fifo"][0] == 2  # worker 2 waited longest


def test_model_fits_lifo_and_first_registered() -> None:
    assert order.model_fits(sequential([2] * 6), 3)["lifo"] == (6, 6)
    assert order.model_fits(sequential([0] * 6), 3)["first-registered"] == (6, 6)


def test_busy_workers_are_not_idle_and_single_idle_is_not_informative() -> None:
    # Worker 0 is busy 10 ms from t=0, worker 1 from t=1 ms: connection 1 found 1 and 2 idle,
    # connection 2 found only worker 2 idle, which tells no model from another.
    records = [
        ConnectionRecord(0, 0, 100, 0, 10_000),
        ConnectionRecord(1, 1, 101, 1_000, 10_000),
        ConnectionRecord(2, 2, 102, 2_000, 10_000),
    ]
    fits = order.model_fits(records, 3)
    assert fits["first-registered"] == (2, 2)
    assert fits["fifo"] == (2, 2)  # idle since index order before the run: the lowest has waited longest
    assert fits["lifo"] == (0, 2)


def test_failed_connections_are_ignored_by_the_models() -> None:
    fits = order.model_fits(sequential([0, None, 1, 2, None, 0]), 3)
    assert fits["fifo"] == (4, 4)


def test_verdict_rotation_for_blocking_sequence() -> None:
    v = order.verdict(sequential([0, 1, 2, 0, 1, 2]), 3, "fifo", "why")
    assert v.model == "fifo"
    assert v.pattern.startswith("rotation")
    assert v.expected
    assert (v.fit, v.informative) == (6, 6)
    assert v.jain == pytest.approx(1.0)
    assert v.max_min == pytest.approx(1.0)
    assert "6/6" in v.line()


def test_verdict_one_worker_takes_all() -> None:
    v = order.verdict(sequential([0] * 6), 3, "first-registered", "why")
    assert v.model == "first-registered"
    assert v.pattern == "one worker takes all (first-registered wins)"
    assert v.expected
    assert v.max_min is None
    assert v.jain == pytest.approx(1 / 3, abs=1e-4)  # rounded to 4 places
    assert "inf" in v.line()


def test_verdict_lifo_single_worker() -> None:
    v = order.verdict(sequential([2] * 6), 3, "lifo", "why")
    assert v.model == "lifo"
    assert "one worker takes all" in v.pattern
    assert v.expected


def test_verdict_flags_an_unexpected_pattern() -> None:
    v = order.verdict(sequential([0, 1, 2, 0, 1, 2]), 3, "first-registered", "why")
    assert v.model == "fifo"
    assert not v.expected


def test_verdict_no_model_fits() -> None:
    v = order.verdict(sequential([1, 1, 0, 2, 2, 0, 1, 0]), 3, "fifo", "why")
    assert v.model is None
    assert v.pattern.startswith("no clear order")
    assert not v.expected
    assert "fits only" in v.line()


def test_verdict_hash_expects_no_order() -> None:
    v = order.verdict(sequential([1, 1, 0, 2, 2, 0, 1, 0]), 3, "hash", "why")
    assert v.pattern.startswith("hash-spread")
    assert v.expected


def test_verdict_herd_mode_expects_any_order_and_counts_wakeups() -> None:
    counters = [WorkerCounters(i, 100 + i, voluntary_switches=6) for i in range(3)]
    v = order.verdict(sequential([1, 0, 2, 2, 0, 1]), 3, None, "why", counters)
    assert v.expected
    assert v.woken_per_connection == pytest.approx(3.0)
    assert "sleeps (voluntary context switches) per connection 3.0" in v.line()


def test_woken_per_connection_needs_every_counter() -> None:
    counters = [WorkerCounters(0, 1, voluntary_switches=4), WorkerCounters(1, 2, voluntary_switches=None)]
    assert herd.woken_per_connection(counters, 4) is None
    assert herd.woken_per_connection(counters[:1], 0) is None
    assert herd.woken_per_connection(counters[:1], 4) == pytest.approx(1.0)


def test_verdict_edge_cases() -> None:
    assert order.verdict(sequential([None, None]), 3, "fifo", "why").pattern == "nothing served"
    assert order.verdict(sequential([0, 0, 0]), 1, "fifo", "why").pattern == "single worker"


def test_verdict_hash_judges_the_spread_against_uniform_hashing_not_an_idle_order() -> None:
    # Six sequential connections all hashed to worker 2 also "fit" LIFO; the reuseport hash ignores
    # idleness, so the verdict tests the spread instead: all six on one of three workers comes 3 times in
    # 3^6 from a uniform hash.
    v = order.verdict(sequential([2, 2, 2, 2, 2, 2]), 3, "hash", "why")
    assert v.pattern == "hash-spread, more uneven than a uniform hash"
    assert v.model is None and v.informative == 0
    assert v.chance == pytest.approx(3 / 3**6, rel=2e-3)
    assert "2 workers served none, 0.3 expected" in v.line()
    assert v.expected


def test_verdict_hash_of_two_connections_on_one_of_three_workers_is_chance() -> None:
    # envoy#33707: 3 workers, 2 connections, both on one worker: a uniform hash does that 1 time in 3.
    v = order.verdict(sequential([1, 1]), 3, "hash", "why")
    assert v.pattern == "hash-spread"
    assert v.chance == pytest.approx(1 / 3, rel=1e-3)
    assert "1 time in 3" in v.seen and "2 workers served none, 1.3 expected" in v.seen
