"""observe under 'Connection: close' (docs/howto/your-server.md's block): nginx's worker 0 accepted 22% of 109,896
connections and held 16 of the 50 seen (32%), and the verdict gave a cause: 'a larger share of its connections
lived until a look (longer-lived ones)'. 50 seen of 109,896 are a sample; 16 where 11 were due is what chance gives
1 time in 14. A cause is named only where the sample parts from the accepts beyond chance; where nearly every
connection accepted was seen (wrk -c6: 6 of 7), the difference is a count, not a sample, and is said as before."""

from __future__ import annotations

import pytest
from test_observe_verdict_load import observed

from accept_order.analysis.chance import binomial_tail
from accept_order.experiments.observe.verdict import verdict

CAUSE = "lived until a look"


def test_a_sample_that_parts_from_the_accepts_as_chance_would_names_no_cause() -> None:
    result = observed([24_490, 42_771, 42_635], [16, 17, 17], [118, 0, 0], accepted_seen=50)
    said = verdict(result)
    assert not any(CAUSE in line or "the accepts split otherwise" in line for line in said), said
    assert any("109,846 of 109,896 connections opened and closed between two samples" in line for line in said), said


def test_a_sample_that_parts_beyond_chance_still_names_its_cause() -> None:
    """Worker 0 accepted 22% and held 40 of the 50 seen: chance gives that far less than once in a million."""
    result = observed([24_490, 42_771, 42_635], [40, 5, 5], [118, 0, 0], accepted_seen=50)
    said = verdict(result)
    assert any(
        line.startswith("the accepts split otherwise: worker 0 accepted 22% of the 109,896 connections and held 80%")
        and "a larger share of its connections lived until a look (longer-lived ones)" in line
        for line in said
    ), said


def test_the_binomial_tail_is_exact() -> None:
    assert binomial_tail(0, 6, 1 / 7) == pytest.approx((6 / 7) ** 6)  # below the mean: P(X <= 0)
    assert binomial_tail(2, 2, 0.5) == pytest.approx(0.25)  # above it: P(X >= 2)
    assert binomial_tail(16, 50, 24_490 / 109_896) == pytest.approx(0.0733, abs=0.001)  # the doc's case: 1 in 14
    assert binomial_tail(3000, 5000, 0.5) < 1e-40  # a few thousand draws in logs: no overflow, no zero division
