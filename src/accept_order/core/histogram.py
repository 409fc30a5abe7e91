"""Exact latency histogram with mmhistogram-compatible text rendering.

Latencies are kept as a count per distinct integer microsecond value, so memory
is bounded by the number of distinct values (not the number of requests) while
min/max/mean/stdev/percentiles stay exact.

Rendering replicates Marek Majkowski's ``mmhistogram`` script, as published in
cloudflare/cloudflare-blog, path ``2017-06-29-ssdp/mmhistogram`` (commit
17d6a89e59362a7ebba27ba31cf10020cd19659d), run with its defaults
(log base 2, 50 columns, counts not percentages). That script reads one float per
line; we feed it (conceptually) ``us / 1000``, i.e. milliseconds. Its rules:

* bucket 0 holds every value ``<= 1``; the bucket labelled ``L`` (1, 2, 4, ...)
  holds values in ``(L, 2L]`` -- upper edges are inclusive, so exactly 1.0 ms is
  in bucket 0 and exactly 2.0 ms in bucket 1;
* every bucket from 0 up to the highest non-empty one is printed, empty or not;
* the bar is ``"*" * int(50 * (count / float(maxcount)))`` (truncated, not
  rounded), right-aligned in a 50-character field;
* the value column is ``max(len(str(lower edge of last bucket)), len("value")) + 1``
  characters wide, right-aligned, for the header and for every row;
* ``med`` is ``M[len(M)/2]`` of the values sorted in *descending* order, i.e. the
  lower of the two middle elements for an even count (nearest-rank p50);
* ``dev`` is the population standard deviation; all stats print with ``%.2f``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from fractions import Fraction
from itertools import accumulate
from typing import Any

__all__ = ["LatencyHistogram", "bar_columns", "histogram_lines", "log2_buckets", "summary_line"]

# mmhistogram defaults (-c 50): width of the star bar and of the dashed header.
COLUMNS = 50
_US_PER_MS = 1000


class LatencyHistogram:
    """Exact histogram of integer microsecond values."""

    __slots__ = ("_counts", "_count", "_sum", "_sumsq", "_cache")

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        # Running integer sums make mean/stdev exact and O(1); Python ints never overflow.
        self._count = 0
        self._sum = 0
        self._sumsq = 0
        # (count at build time, sorted values, cumulative counts). Every mutation
        # raises _count, so comparing counts detects staleness without add() having
        # to touch the cache in the hot loop.
        self._cache: tuple[int, list[int], list[int]] | None = None

    def add(self, us: int, n: int = 1) -> None:
        """Record ``n`` samples of ``us`` microseconds."""
        if us < 0 or n < 1:
            raise ValueError(f"need us >= 0 and n >= 1, got us={us!r} n={n!r}")
        counts = self._counts
        counts[us] = counts.get(us, 0) + n
        self._count += n
        self._sum += us * n
        self._sumsq += us * us * n

    def merge(self, other: LatencyHistogram) -> None:
        """Add all samples of ``other`` into this histogram."""
        counts = self._counts
        # Snapshot first so that h.merge(h) doubles instead of iterating a changing dict.
        for us, n in list(other._counts.items()):
            counts[us] = counts.get(us, 0) + n
        self._count += other._count
        self._sum += other._sum
        self._sumsq += other._sumsq

    @property
    def count(self) -> int:
        """Number of recorded samples."""
        return self._count

    @property
    def min_us(self) -> int | None:
        """Smallest sample, or None when empty."""
        return self._sorted()[0][0] if self._count else None

    @property
    def max_us(self) -> int | None:
        """Largest sample, or None when empty."""
        return self._sorted()[0][-1] if self._count else None

    @property
    def mean_us(self) -> float:
        """Arithmetic mean; ValueError when empty."""
        self._require_samples()
        return self._sum / self._count  # int/int true division is correctly rounded

    @property
    def stdev_us(self) -> float:
        """Population standard deviation (like mmhistogram's dev); ValueError when empty."""
        self._require_samples()
        return math.sqrt(self._variance_numerator() / (self._count * self._count))

    def percentile(self, q: float) -> int:
        """Nearest-rank percentile: the smallest sample with at least q% of samples <= it.

        That is the sample at 1-based rank ``max(1, ceil(q/100 * count))``, so p0 is the
        minimum, p100 the maximum and p50 the lower middle value (mmhistogram's med).
        ``q`` is taken as the decimal it prints as, so p99.9 of 1000 samples is rank 999.
        """
        if not 0 <= q <= 100:  # also rejects NaN
            raise ValueError(f"percentile must be in [0, 100], got {q!r}")
        self._require_samples()
        # Fraction(repr) avoids binary float error: 99.9 as a double is a hair above 99.9.
        rank = math.ceil(Fraction(repr(float(q))) * self._count / 100)
        return self._value_at(max(rank, 1) - 1)

    def at_rank(self, rank: int) -> int:
        """The sample at 1-based position ``rank`` of the ascending order (1: the minimum)."""
        self._require_samples()
        if not 1 <= rank <= self._count:
            raise ValueError(f"rank must be in [1, {self._count}], got {rank!r}")
        return self._value_at(rank - 1)

    def median_us(self) -> float:
        """mmhistogram's med: the middle sample, the lower middle one for even counts."""
        self._require_samples()
        # mmhistogram takes index n//2 of the descending list = ascending index (n-1)//2.
        return float(self._value_at((self._count - 1) // 2))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: ``{"unit": "us", "counts": [[value, n], ...]}`` sorted by value."""
        return {"unit": "us", "counts": [[us, self._counts[us]] for us in self._sorted()[0]]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LatencyHistogram:
        """Inverse of to_dict; ValueError on anything malformed."""
        if not isinstance(d, dict) or d.get("unit") != "us" or not isinstance(d.get("counts"), list):
            raise ValueError('expected {"unit": "us", "counts": [[value, n], ...]}')
        counts: dict[int, int] = {}
        # Build the dict directly (not via add) so loading ~1e5 distinct values stays cheap;
        # `type(x) is int` also rejects bools and floats, which JSON could smuggle in.
        for pair in d["counts"]:
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise ValueError(f"bad [value, n] pair: {pair!r}")
            us, n = pair
            if type(us) is not int or type(n) is not int or us < 0 or n < 1:
                raise ValueError(f"bad [value, n] pair: {pair!r}")
            counts[us] = counts.get(us, 0) + n
        hist = cls()
        hist._counts = counts
        hist._count = sum(counts.values())
        hist._sum = sum(us * n for us, n in counts.items())
        hist._sumsq = sum(us * us * n for us, n in counts.items())
        return hist

    def __len__(self) -> int:
        """Number of recorded samples (same as ``count``), not of distinct values."""
        return self._count

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LatencyHistogram):
            return NotImplemented
        return self._counts == other._counts

    __hash__ = None  # type: ignore[assignment]  # mutable, so unhashable

    def __repr__(self) -> str:
        return f"LatencyHistogram(count={self._count}, distinct={len(self._counts)})"

    # -- internals -------------------------------------------------------------

    def _require_samples(self) -> None:
        if not self._count:
            raise ValueError("histogram is empty")

    def _variance_numerator(self) -> int:
        # n^2 * population variance, exact: n*sum(x^2) - sum(x)^2 (never negative).
        return self._count * self._sumsq - self._sum * self._sum

    def _sorted(self) -> tuple[list[int], list[int]]:
        cache = self._cache
        if cache is None or cache[0] != self._count:
            values = sorted(self._counts)
            counts = self._counts
            cache = (self._count, values, list(accumulate(counts[v] for v in values)))
            self._cache = cache
        return cache[1], cache[2]

    def _value_at(self, index: int) -> int:
        """Sample at 0-based position ``index`` of the ascending order."""
        values, cumulative = self._sorted()
        return values[bisect_right(cumulative, index)]


def _bucket_index(us: int) -> int:
    """mmhistogram bucket number of a value of ``us`` microseconds (ms = us/1000).

    Bucket 0 is ``ms <= 1``; bucket i >= 1 is ``2**(i-1) < ms <= 2**i``. Done in
    integers: the smallest i with 1000 * 2**i >= us.
    """
    if us <= _US_PER_MS:
        return 0
    whole_ms_ceil = -(-us // _US_PER_MS)
    return (whole_ms_ceil - 1).bit_length()


def log2_buckets(hist: LatencyHistogram) -> list[tuple[int, int]]:
    """mmhistogram buckets as (lower edge in ms, count), from 0 to the last non-empty one."""
    per_bucket: list[int] = []
    for us, n in hist._counts.items():
        i = _bucket_index(us)
        if i >= len(per_bucket):
            per_bucket.extend([0] * (i + 1 - len(per_bucket)))
        per_bucket[i] += n
    return [(0 if i == 0 else 1 << (i - 1), c) for i, c in enumerate(per_bucket)]


def summary_line(title: str, hist: LatencyHistogram) -> str:
    """mmhistogram's first line, stats in milliseconds.

    mmhistogram crashes on empty input; for an empty histogram we print just
    ``"<title> count:0"``.
    """
    n = hist.count
    if not n:
        return f"{title} count:0"
    # Dividing exact integers once keeps every figure correctly rounded; us/1000 is
    # the same double mmhistogram would parse from a "%.3f" millisecond line.
    min_ms = hist._value_at(0) / _US_PER_MS
    max_ms = hist._value_at(n - 1) / _US_PER_MS
    avg_ms = hist._sum / (n * _US_PER_MS)
    med_ms = hist._value_at((n - 1) // 2) / _US_PER_MS
    dev_ms = math.sqrt(hist._variance_numerator() / (n * n * _US_PER_MS * _US_PER_MS))
    return f"{title} min:{min_ms:.2f} avg:{avg_ms:.2f} med={med_ms:.2f} max:{max_ms:.2f} dev:{dev_ms:.2f} count:{n}"


def histogram_lines(title: str, hist: LatencyHistogram, columns: int = COLUMNS) -> list[str]:
    """mmhistogram's ``TITLE:`` line, ``value |--- count`` header and bucket rows (ms), with a bar of
    `columns` characters (mmhistogram's ``-c``; its default 50 unless a narrow terminal asks for fewer)."""
    buckets = log2_buckets(hist)
    width = _value_width(buckets)
    lines = [f"{title}:", f"{'value':>{width}} |{'-' * columns} count"]
    if not buckets:
        return lines
    maxcount = float(max(c for _, c in buckets))
    for edge, c in buckets:
        # Same float expression as mmhistogram so truncation matches bit for bit.
        stars = "*" * int(columns * (c / maxcount))
        lines.append(f"{edge:>{width}d} |{stars:>{columns}} {c}")
    return lines


def bar_columns(hist: LatencyHistogram, line_width: int, least: int = 10) -> int:
    """The widest bar, up to mmhistogram's 50, whose bucket rows fit `line_width` characters with every count
    whole (a bar of at least `least`: the rows stay readable, and fold, on a terminal narrower than that)."""
    buckets = log2_buckets(hist)
    counts = max((len(str(c)) for _, c in buckets), default=1)
    around = _value_width(buckets) + len(" |") + len(" ") + max(counts, len("count"))
    return max(least, min(COLUMNS, line_width - around))


def _value_width(buckets: list[tuple[int, int]]) -> int:
    """The value column's width: the last bucket's lower edge or the word 'value', and one space."""
    last_edge = buckets[-1][0] if buckets else 0
    return max(len(str(last_edge)), len("value")) + 1
