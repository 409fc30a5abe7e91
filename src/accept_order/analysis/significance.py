"""Whether two samples (one figure per repeated run) differ significantly: Student's two-sample, two-tailed
t-test at 95% with a t table, as pyperf decides it (no scipy).

The logic follows pyperf's `is_significant`, `tscore`, `pooled_sample_variance` and `tdist95conf_level`
(psf/pyperf, pyperf/_utils.py; the table is the one pyperf carries, itself from perf.py of Unladen
Swallow). Where pyperf's `is_significant_benchs` (pyperf/_compare.py) answers "significant" for lack of a
test (one value each; a zero variance that divides by zero), this says what is known instead: one run each
cannot be tested, and two samples with no spread at all differ exactly when their means do.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Two-tailed 95% critical values of Student's t by degrees of freedom (index), 1 to 30.
_T95 = (0.0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045,
        2.042)  # fmt: skip
# Beyond the table, pyperf's steps: (at least this many degrees of freedom, critical value).
_T95_LARGE = ((200, 1.960), (100, 1.984), (80, 1.990), (60, 2.000), (50, 2.009), (40, 2.021))


def t95(df: float) -> float:
    """The 95% two-tailed critical value for `df` degrees of freedom (pyperf's tdist95conf_level)."""
    n = int(round(df))
    for at_least, value in _T95_LARGE:
        if n >= at_least:
            return value
    return _T95[min(n, len(_T95) - 1)]


@dataclass(frozen=True)
class TTest:
    """The outcome: significant at 95% or not, the t score (None when it could not be computed) and the
    critical value it was held against."""

    significant: bool
    t: float | None
    critical: float | None

    def text(self) -> str:
        if self.critical is None:
            return "one run each: significance cannot be tested"
        if self.t is None or math.isinf(self.t):
            return "significant (no spread in either)" if self.significant else "not significant (identical)"
        word = "significant" if self.significant else "not significant"
        return f"{word} (t={self.t:.2f}, |t| ≥ {self.critical:.2f} at 95%)"


def t_test(a: Sequence[float], b: Sequence[float]) -> TTest:
    """pyperf's is_significant: pooled variance, t = (mean a - mean b) / sqrt(2 * pooled / n), two-tailed at
    95% with n_a + n_b - 2 degrees of freedom. The samples are paired runs, so the same length."""
    if len(a) != len(b):
        raise ValueError("different number of values")
    if len(a) < 2:
        return TTest(False, None, None)
    df = len(a) + len(b) - 2
    critical = t95(df)
    ma, mb = statistics.mean(a), statistics.mean(b)
    pooled = (math.fsum((x - ma) ** 2 for x in a) + math.fsum((x - mb) ** 2 for x in b)) / df
    diff = ma - mb
    if pooled == 0:
        return TTest(diff != 0, math.copysign(math.inf, diff) if diff else None, critical)
    t = diff / math.sqrt(2 * pooled / len(a))
    return TTest(abs(t) >= critical, t, critical)
