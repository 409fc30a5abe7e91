"""How likely a pattern is by chance: the figures a verdict needs to say how sure it is.

- `chance_of_fit`: a model predicted `fit` of the connections; had each connection gone to an idle worker
  picked at random, how likely is a fit at least that good? (A Poisson-binomial tail: connection i matches by
  chance with probability p_i = 1/idle_i when the model names an idle worker, else 0.)
- `uniform_spread_p`: connections spread over workers; how likely is a spread at least this uneven under a
  uniform hash? The exact multinomial test when the outcomes are few enough to list, else Pearson's
  chi-square (whose tail has a closed form for an integer number of degrees of freedom).
- `expected_unserved`: workers a uniform hash leaves without a connection, N·(1−1/N)^K.

No scipy: each is a few lines of arithmetic, checked in tests against values computed by hand.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

EXACT_FIT_MAX = 600  # connections up to which the fit's tail is summed exactly (O(n²) steps)
EXACT_SPREAD_MAX = 20_000  # spreads (partitions of K into N parts) listed at most for the exact test


def chance_of_fit(probabilities: Sequence[float], fit: int) -> float:
    """P(at least `fit` of the independent events happen), event i with probability probabilities[i]."""
    n = len(probabilities)
    if fit <= 0:
        return 1.0
    if fit > n:
        return 0.0
    if n <= EXACT_FIT_MAX:
        dist = [1.0] + [0.0] * n  # dist[j]: P(j matches so far)
        for i, p in enumerate(probabilities, start=1):
            for j in range(i, 0, -1):
                dist[j] = dist[j] * (1 - p) + dist[j - 1] * p
            dist[0] *= 1 - p
        return min(1.0, max(0.0, sum(dist[fit:])))
    # Many connections: the normal approximation with a continuity correction (its own error is far below
    # the precision a verdict states, "about 1 in N").
    mean = sum(probabilities)
    var = sum(p * (1 - p) for p in probabilities)
    if var == 0:
        return 1.0 if fit <= mean else 0.0
    z = (fit - 0.5 - mean) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2))


def expected_unserved(workers: int, connections: int) -> float:
    """Workers a uniform hash gives no connection, on average: N·(1−1/N)^K."""
    if workers <= 0:
        return 0.0
    return workers * (1 - 1 / workers) ** connections


def chi2_sf(x: float, df: int) -> float:
    """P(X ≥ x) for a chi-square variable with an integer `df` ≥ 1 degrees of freedom (closed form)."""
    if x <= 0:
        return 1.0
    half = x / 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for i in range(1, df // 2):
            term *= half / i
            total += term
        return min(1.0, math.exp(-half) * total)
    total = math.erfc(math.sqrt(half))
    term = math.sqrt(half) / math.gamma(1.5)  # (x/2)^(1/2) / Γ(3/2)
    for i in range(1, (df + 1) // 2):
        total += math.exp(-half) * term
        term *= half / (i + 0.5)
    return min(1.0, total)


def _partitions(total: int, parts: int, largest: int) -> Iterator[tuple[int, ...]]:
    """Every way to write `total` as at most `parts` non-increasing positive parts, each ≤ `largest`."""
    if total == 0:
        yield ()
        return
    if parts == 0:
        return
    # The largest part is at least an even share: a smaller one leaves a rest that cannot fit, and trying
    # each (20,000 spreads of a million connections over 2 workers) took a minute to find none.
    for first in range(min(total, largest), -(-total // parts) - 1, -1):
        for rest in _partitions(total - first, parts - 1, first):
            yield (first, *rest)


def _spread_count(total: int, parts: int, most: int) -> int:
    """How many ways `_partitions(total, parts, total)` lists, counted without listing them, or `most + 1` where
    there are more: listing 20,001 spreads only to find them too many for the exact test took 20-50 ms of each
    verdict on thousands of connections. At most 2 parts: total // 2 + 1 ways; at most 3: the integer nearest
    (total + 3)² / 12; past those, by parts no larger than each size in turn (a partition into at most m parts is
    one into parts of at most m, turned over), which those two bound to a total of a few hundred."""
    parts = min(parts, total)
    if parts <= 1:
        return 1
    if total // 2 + 1 > most:
        return most + 1
    if parts == 2:
        return total // 2 + 1
    if ((total + 3) ** 2 + 6) // 12 > most:
        return most + 1
    ways = [1] + [0] * total  # ways[n]: partitions of n into parts no larger than the size reached
    for size in range(1, parts + 1):
        for n in range(size, total + 1):
            ways[n] = min(most + 1, ways[n] + ways[n - size])
        if ways[total] > most:
            return most + 1
    return ways[total]


def _log_probability(counts: Sequence[int], workers: int) -> float:
    """log P(this exact assignment of counts to workers) under a uniform hash."""
    k = sum(counts)
    return math.lgamma(k + 1) - sum(math.lgamma(c + 1) for c in counts) - k * math.log(workers)


def _arrangements(partition: tuple[int, ...], workers: int) -> int:
    """How many assignments to `workers` named workers a multiset of counts has (zeros fill the rest)."""
    full = list(partition) + [0] * (workers - len(partition))
    ways = math.factorial(workers)
    for value in set(full):
        ways //= math.factorial(full.count(value))
    return ways


def uniform_spread_p(counts: Sequence[int]) -> tuple[float, str]:
    """(p, test): how likely a spread at least as uneven as `counts` is under a uniform hash over
    len(counts) workers. Exact (the multinomial test: the total probability of every spread no more likely
    than this one) when the spreads are few enough to list; else Pearson's chi-square."""
    workers, k = len(counts), sum(counts)
    if workers < 2 or k == 0:
        return 1.0, "none"
    # Counted first: few enough, they are listed for the exact test; too many, chi-square's.
    if _spread_count(k, workers, EXACT_SPREAD_MAX) <= EXACT_SPREAD_MAX:
        observed = _log_probability(counts, workers)
        p = 0.0
        for partition in _partitions(k, workers, k):
            full = list(partition) + [0] * (workers - len(partition))
            logp = _log_probability(full, workers)
            if logp <= observed + 1e-9:
                p += _arrangements(partition, workers) * math.exp(logp)
        return min(1.0, p), "exact multinomial"
    expected = k / workers
    statistic = sum((c - expected) ** 2 / expected for c in counts)
    return chi2_sf(statistic, workers - 1), "chi-square"


def binomial_tail(k: int, n: int, p: float) -> float:
    """How often `n` draws, each a hit with probability `p`, give a count at least as far from n * p as `k`, on
    k's side: P(X >= k) above the mean, P(X <= k) below it (exact: a sum of binomial terms, in logs so that a few
    thousand draws do not overflow)."""
    if not 0.0 < p < 1.0 or n <= 0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)

    def term(i: int) -> float:
        return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q)

    side = range(k, n + 1) if k >= n * p else range(0, k + 1)
    return min(1.0, sum(term(i) for i in side))


def how_often(p: float) -> str:
    """A probability as people say it: "1 time in 3", "1 time in 2,400", "more often than not" (≥ 0.5),
    "less than once in a million times"."""
    if p >= 0.5:
        return "more often than not"
    if p < 1e-6:
        return "less than once in a million times"
    n = 1 / p
    rounded = round(n) if n < 100 else int(float(f"{n:.2g}"))
    return f"1 time in {rounded:,}"
