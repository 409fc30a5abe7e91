"""How sure a verdict is: the chance figures against values worked out by hand, and verdicts that do not
name a mechanism the mode lacks."""

from __future__ import annotations

import itertools
import math

import pytest

from accept_order.analysis import order
from accept_order.analysis.chance import (
    _partitions,
    _spread_count,
    chance_of_fit,
    chi2_sf,
    expected_unserved,
    how_often,
    uniform_spread_p,
)
from accept_order.core.measures import ConnectionRecord


def records(workers: list[int], cpus: list[int] | None = None) -> list[ConnectionRecord]:
    """Sequential connections, each finished before the next starts (every worker idle each time)."""
    cpus = cpus or [None] * len(workers)  # type: ignore[list-item]
    return [
        ConnectionRecord(i, w, 100 + w, i * 1000, 100, None, 40000 + i, cpu)
        for i, (w, cpu) in enumerate(zip(workers, cpus, strict=True))
    ]


@pytest.mark.parametrize(
    ("x", "df", "p"),
    [(3.841, 1, 0.05), (5.991, 2, 0.05), (7.815, 3, 0.05), (9.488, 4, 0.05), (11.070, 5, 0.05), (6.635, 1, 0.01)],
)
def test_chi2_tail_matches_the_tables(x: float, df: int, p: float) -> None:
    assert chi2_sf(x, df) == pytest.approx(p, abs=2e-4)


def test_chance_of_fit_is_the_binomial_tail_when_every_chance_is_equal() -> None:
    # 20 fair coins, at least 15 heads: sum C(20,k) for k >= 15 over 2^20.
    exact = sum(math.comb(20, k) for k in range(15, 21)) / 2**20
    assert chance_of_fit([0.5] * 20, 15) == pytest.approx(exact)
    assert chance_of_fit([1.0, 0.5], 2) == pytest.approx(0.5)  # a certain fit adds no evidence
    assert chance_of_fit([0.5] * 3, 0) == 1.0 and chance_of_fit([0.5] * 3, 4) == 0.0
    # Past the exact limit, the normal approximation stays close to the binomial tail.
    big = sum(math.comb(1000, k) for k in range(530, 1001)) / 2**1000
    assert chance_of_fit([0.5] * 1000, 530) == pytest.approx(big, rel=0.05)


def test_uniform_spread_exact_and_chi_square() -> None:
    assert uniform_spread_p([2, 0, 0]) == pytest.approx((1 / 3, "exact multinomial"))
    assert uniform_spread_p([1, 1, 0])[0] == pytest.approx(1.0)
    # 4 workers, 100 connections, 40/20/20/20: the exact test lists every spread no more likely.
    p, test = uniform_spread_p([40, 20, 20, 20])
    assert test == "exact multinomial" and 0.005 < p < 0.03
    p, test = uniform_spread_p([37, 30, 0, 6, 27] * 3)  # too many spreads to list
    assert test == "chi-square" and p < 1e-6


def test_the_spreads_are_counted_as_many_as_are_listed() -> None:
    """Whether the exact test lists the spreads is decided by counting them (the closed forms for 2 and 3 parts,
    the table past them): the count is the listing's, up to one past the limit, at every total and number of
    workers, and near where the closed forms and the limit change the answer (at most 2 parts pass the limit at a
    total of 2 * most, at most 3 near the square root of 12 * most; EXACT_SPREAD_MAX's own limit is the same code
    with larger numbers, and the next test's)."""
    for most in (5, 100, 1000):
        totals = [*range(40), *range(104, 110), *range(2 * most - 3, 2 * most + 3)]
        for total in totals:
            for parts in (1, 2, 3, 4, 5, 8, 40, 600):
                listed = sum(1 for _ in itertools.islice(_partitions(total, parts, total), most + 1))
                assert _spread_count(total, parts, most) == listed, (most, total, parts)


def test_the_exact_test_lists_up_to_the_limit_and_no_further() -> None:
    """2 workers: total // 2 + 1 spreads, so 39,998 connections make exactly the limit's 20,000 (exact) and 40,000
    one past it (chi-square)."""
    assert uniform_spread_p([19_999, 19_999])[1] == "exact multinomial"
    assert uniform_spread_p([20_000, 20_000])[1] == "chi-square"


def chi2_sf_by_integration(x: float, df: int, steps: int = 20_000) -> float:
    """The chi-square tail by Simpson's rule over its density: a witness independent of the closed form."""
    k = df / 2
    norm = 1 / (2**k * math.gamma(k))

    def density(u: float) -> float:
        return norm * u ** (k - 1) * math.exp(-u / 2) if u > 0 else (norm if k == 1 else 0.0)

    upper = x + 200.0  # the density beyond is below 1e-40
    h = (upper - x) / steps
    total = density(x) + density(upper) + sum((4 if i % 2 else 2) * density(x + i * h) for i in range(1, steps))
    return total * h / 3


def test_the_chi_square_branch_uses_workers_minus_one_degrees_of_freedom() -> None:
    """10 workers, 100 connections: too many spreads to list. Pearson's statistic is 10.0; its tail with 9
    degrees of freedom is 0.35, with 8 or 10 it is 0.27 or 0.44, so a wrong count of them fails here."""
    counts = [16, 12, 8, 11, 9, 10, 13, 7, 4, 10]
    p, test = uniform_spread_p(counts)
    assert test == "chi-square"
    assert p == pytest.approx(chi2_sf_by_integration(10.0, 9), abs=1e-4)
    assert abs(chi2_sf_by_integration(10.0, 8) - p) > 0.05 and abs(chi2_sf_by_integration(10.0, 10) - p) > 0.05


def test_expected_unserved_workers() -> None:
    assert expected_unserved(3, 2) == pytest.approx(3 * (2 / 3) ** 2)
    assert expected_unserved(4, 0) == 4.0


def test_how_often() -> None:
    assert how_often(1 / 3) == "1 time in 3"
    assert how_often(1 / 2437) == "1 time in 2,400"
    assert how_often(0.7) == "more often than not"
    assert how_often(1e-9) == "less than once in a million times"


def test_a_herd_mode_that_happens_to_fit_fifo_is_not_called_fifo() -> None:
    # 3 workers, a herd (no order predicted), a short rotation: FIFO fits, but the mechanism is not FIFO.
    v = order.verdict(records([0, 1, 2] * 4), 3, None, "a herd")
    assert v.model == "fifo"
    assert "FIFO" in v.pattern and "predicts none" in v.pattern and "rotation" not in v.pattern
    assert v.chance is not None and v.chance < 0.01
    # Few connections: the same fit is what a random idle pick gives often; said as chance.
    v = order.verdict(records([0, 1, 2, 0, 1]), 3, None, "a herd")
    assert v.pattern == "no order beyond chance"
    assert v.chance is not None and v.chance >= 0.01 and "FIFO fits" in v.seen


def test_the_modes_own_model_is_named_with_its_chance() -> None:
    v = order.verdict(records([0, 1, 2] * 7), 3, "fifo", "blocking accept")
    assert v.pattern.startswith("rotation") and v.expected
    # 18 informative connections after each worker's first turn, each 1 in 3 by chance (no correction:
    # the mode's own model is one hypothesis)
    assert v.chance == pytest.approx(3.0**-18, rel=1e-2)


def test_cpu_steered_modes_say_the_clients_cpu_picks_never_a_lock() -> None:
    v = order.verdict(records([1] * 10, [1] * 10), 3, "cpu", "reuseport-cpu")
    assert v.pattern == "the client's CPU picks the worker, one worker takes all"
    assert v.model == "cpu" and v.expected and (v.fit, v.informative) == (10, 10)
    assert "CPU 1 for 10 of 10" in v.seen
    assert "lock" not in v.pattern and "first-registered" not in v.pattern
    # The client moved from CPU 0 to 1 and its connections followed it.
    v = order.verdict(records([0] * 5 + [1] * 5, [0] * 5 + [1] * 5), 2, "cpu", "reuseport-cpu")
    assert v.model == "cpu" and v.pattern == "the client's CPU picks the worker"
    # The worker is not the client's CPU's: said as seen, without a model.
    v = order.verdict(records([2] * 10, [1] * 10), 3, "cpu", "reuseport-cpu")
    assert (v.pattern, v.model, v.expected) == ("one worker takes all", None, False)
    # Unknown client CPUs: nothing to fit, and the verdict says so.
    v = order.verdict(records([1] * 10), 3, "cpu", "incoming-cpu")
    assert v.model is None and "not known" in v.seen


def test_the_records_table_has_the_clients_cpu() -> None:
    """The CPU a connection's client ran on is saved with its record, so the records CSV carries it."""
    from accept_order.results import export

    run = {"records": [{"seq": 0, "worker": 1, "pid": 9, "start_us": 0, "latency_us": 5, "client_cpu": 1}]}
    header, row = export.records([run]).splitlines()
    assert header.split(",")[-1] == "client_cpu" and row.split(",")[-1] == "1"
