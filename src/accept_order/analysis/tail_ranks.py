"""How often chance ranks the workers' tails as closely with what each held as a run's tails are ranked.

A pool's verdict said 'the tails follow the split: each worker that held more connections had the higher p99'
from the order of the p99s alone, and the same words of 2 workers, one pair, which p99s dealt at random order
so half the time, as of 4 workers in order (6 pairs, 1 time in 24). The figure here is a permutation test of
Kendall's S (pairs ranked alike less pairs ranked the other way): the p99s dealt to the same workers in every
order, the share of orders whose S is at least the run's on its side. Exact over every order up to
EXACT_WORKERS_MAX workers; above, the normal approximation of S with both sides' ties (Kendall's variance)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import permutations

EXACT_WORKERS_MAX = 7  # 5,040 orders of 21 pairs: a few ms; 8 workers' 40,320 orders took most of a second here


def kendall_s(xs: Sequence[float], ys: Sequence[float]) -> int:
    """Pairs ranked alike by `xs` and `ys` less pairs ranked the other way (a tie on either side: neither)."""
    s = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            product = (xs[i] - xs[j]) * (ys[i] - ys[j])
            s += (product > 0) - (product < 0)
    return s


def rank_chance(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, str]:
    """(p, test): how often `ys` dealt to the places of `xs` in a random order rank with them at least as closely
    as they do, on their side (S at least the run's where it is positive, at most where negative); 1.0 for an S
    of 0 or fewer than two values."""
    if len(xs) != len(ys):
        raise ValueError("one value of each for every worker")
    observed = kendall_s(xs, ys)
    if len(xs) < 2 or observed == 0:
        return 1.0, "none"
    side = 1 if observed > 0 else -1
    if len(xs) <= EXACT_WORKERS_MAX:
        orders = list(permutations(ys))
        as_close = sum(1 for order in orders if side * kendall_s(xs, order) >= side * observed)
        return as_close / len(orders), "exact permutation"
    variance = _s_variance(len(xs), _tie_sizes(xs), _tie_sizes(ys))
    if variance <= 0:
        return 1.0, "none"
    z = (abs(observed) - 1) / math.sqrt(variance)  # S moves in steps of 2: a continuity correction of 1
    return 0.5 * math.erfc(z / math.sqrt(2)), "Kendall's normal approximation"


def _tie_sizes(values: Sequence[float]) -> list[int]:
    return [n for n in Counter(values).values() if n > 1]


def _s_variance(n: int, ties_x: list[int], ties_y: list[int]) -> float:
    """Var(S) under independence with ties on both sides (Kendall, Rank Correlation Methods, 4.3)."""

    def sum_of(ties: list[int], f: int) -> float:
        return float(sum(t * (t - 1) * (2 * t + 5 if f == 0 else (t - 2) if f == 1 else 1) for t in ties))

    base = (n * (n - 1) * (2 * n + 5) - sum_of(ties_x, 0) - sum_of(ties_y, 0)) / 18
    if n > 2:
        base += sum_of(ties_x, 1) * sum_of(ties_y, 1) / (9 * n * (n - 1) * (n - 2))
    return base + sum_of(ties_x, 2) * sum_of(ties_y, 2) / (2 * n * (n - 1))
