"""Review RG of 4f504e0: the floor sentence quoted a run's own odds 'against' the floor's even where they are lower. The
nearest-rank p99 steps with n: a run of 499 misreads in 0.48% of runs, the floor of 500 in 1.34% (the binomial sum,
checked here against exact rational arithmetic), and the sentence read '0% of runs of 499 measurements, against 1% of
runs of 500'. Now such a run's odds read 'under 1%', 'no more often than the floor's'."""

from __future__ import annotations

import math
from fractions import Fraction

from test_small_sentences_model import run_of

from accept_order.analysis.model_check import MIN_JUDGED, TOLERANCE, p99_read_low, too_few
from accept_order.experiments.latency.model_verdict import model_line


def exact_p99_read_low(n: int) -> float:
    """The same chance in rational arithmetic (the probability itself rounded to a fraction first)."""
    below = Fraction(1 - 100 ** (-1 / TOLERANCE))
    return float(sum(math.comb(n, k) * below**k * (1 - below) ** (n - k) for k in range(math.ceil(0.99 * n), n + 1)))


def test_the_odds_are_the_binomial_sum() -> None:
    for n in (100, 150, 300, 399, 499, 500, 1000):
        assert math.isclose(p99_read_low(n), exact_p99_read_low(n), rel_tol=1e-9), n
    assert p99_read_low(499) < p99_read_low(MIN_JUDGED) < p99_read_low(400)  # the step the sentence must follow


def test_a_run_whose_odds_are_below_the_floor_s_is_not_set_against_it() -> None:
    # 2.4 ms against 2.01 predicted: within the band, so too few to judge (9 ms, 4.5x, is judged: a p99 of 499
    # reads that far above in under 0.01% of runs, test_model_few_far_above.py)
    line = model_line([run_of("blocking", [2000] * 474 + [2400] * 25)]) or ""
    assert "(499 measured)" in line, line
    assert "in under 1% of runs of 499 measurements, no more often than the floor's 1% of runs of 500" in line, line
    assert "0%" not in line and "against" not in line, line


def test_a_run_above_the_floor_s_odds_still_is() -> None:
    assert too_few([400]).endswith("in 3% of runs of 400 measurements, against 1% of runs of 500")
    assert too_few([100, 499]).endswith(
        "28% of runs of 100 and under 1% of runs of 499 measurements, against 1% of runs of 500"
    )
