"""Service times as the built-in workers measure them: a small log-linear histogram of microseconds.

A worker times each connection's own service (from the start of its turn to its close) and keeps a count
per bucket: 64 buckets per power of two above 128 µs (each under 1.6% wide), exact below. That bounds
the memory (at most ~1,500 buckets for anything up to hours) and costs a few integer operations per
connection, so the per-connection cost stays negligible next to the accept and the reply; the sum is kept
exactly beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

EXACT_BELOW = 128  # µs: every value under it is its own bucket
_BITS = 7  # significant bits kept: values from 128 µs up share a bucket with the next 1/64 of them


def bucket(us: int) -> int:
    """The lower bound of the bucket holding `us` microseconds."""
    if us < EXACT_BELOW:
        return us
    shift = us.bit_length() - _BITS
    return (us >> shift) << shift


def width(lower: int) -> int:
    """How many microseconds the bucket starting at `lower` spans."""
    return 1 if lower < EXACT_BELOW else 1 << (lower.bit_length() - _BITS)


class ServiceTimes:
    """A worker's running histogram and exact sum; `add` is all it does per connection."""

    __slots__ = ("counts", "sum_us")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.sum_us = 0

    def add(self, us: int) -> None:
        key = us if us < EXACT_BELOW else (us >> (s := us.bit_length() - _BITS)) << s
        self.counts[key] = self.counts.get(key, 0) + 1
        self.sum_us += us

    def pairs(self) -> list[tuple[int, int]]:
        return sorted(self.counts.items())


def merged(histograms: Iterable[Sequence[Sequence[int]]]) -> list[tuple[int, int]]:
    """Several workers' [lower, count] pairs as one sorted list."""
    total: dict[int, int] = {}
    for pairs in histograms:
        for lower, count in pairs:
            total[lower] = total.get(lower, 0) + count
    return sorted(total.items())


def quantile_sample(pairs: Sequence[Sequence[int]], size: int) -> list[float]:
    """`size` values (fewer when fewer were counted) spread evenly through the distribution the pairs hold,
    each bucket's share spread evenly across the bucket: a bounded sample to draw service times from."""
    count = sum(n for _, n in pairs)
    if not count:
        return []
    size = min(size, count)
    out: list[float] = []
    seen = 0
    index = 0
    for lower, n in pairs:
        span = width(lower)
        # the sample's k-th value is the (k + 0.5)/size quantile
        while index < size and (index + 0.5) * count / size < seen + n:
            within = ((index + 0.5) * count / size - seen) / n
            out.append(lower + within * span)
            index += 1
        seen += n
    return out
