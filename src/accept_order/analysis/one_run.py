"""How sure a verdict drawn from one run of each mode (or cap) can be, from what one run holds.

One run holds its latencies: samples, so a percentile has a sampling interval. The interval used is the
distribution-free one of order statistics: of n samples, the number below the true q-quantile is binomial
(n, q), so the samples at ranks n·q ∓ 1.96·√(n·q·(1−q)) bound it at about 95% (no scipy, no resampling: the
same answer every time). Where two runs' intervals overlap, even the run itself cannot tell them apart.

Where they do not, that is still not a difference between the modes: on a busy machine two runs of the
same mode differ by far more than their sampling (six runs of epoll here: p99 31.7 to 75.0 ms, each
interval a few percent wide; 11 of their 15 pairs had intervals apart). Latencies in a closed loop are
not independent either (a queue makes its neighbours slow together). So the sentence says which of the
two it is, and names --repeat, which is what tests a difference (analysis/stability.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.histogram import LatencyHistogram
from .tails import Pair, TailVerdict, histogram_figures

Z95 = 1.96
REPEAT = "--repeat 5"  # what tests it: each run five times, interleaved, with a t-test of the p99s


@dataclass(frozen=True)
class Interval:
    """A percentile's ~95% sampling interval in µs, and the samples it was read from. `high_us` None: the
    samples do not bound it above (too few of them: its rank is past the slowest)."""

    low_us: int
    high_us: int | None
    samples: int

    def overlaps(self, other: Interval) -> bool:
        below = other.high_us is None or self.low_us <= other.high_us
        return below and (self.high_us is None or other.low_us <= self.high_us)

    def text(self) -> str:
        return f"{self.low_us / 1000:.2f}-{'∞' if self.high_us is None else f'{self.high_us / 1000:.2f}'}"


def percentile_interval(histogram: LatencyHistogram, q: float) -> Interval:
    """The samples at ranks n·p ∓ 1.96·√(n·p·(1−p)) (p = q/100). A rank beyond the samples bounds nothing on
    its side: the slowest sample is no 95% bound (p99 of 20 latencies: ranks 18 to 21; all 20 are below the true
    p99 in 82% of such runs, so the slowest two covered it in 18%), so none above; below the fastest, 0 µs."""
    n = histogram.count
    p = q / 100
    half = Z95 * math.sqrt(n * p * (1 - p))
    low, high = math.floor(n * p - half), math.ceil(n * p + half)
    return Interval(histogram.at_rank(low) if low >= 1 else 0, histogram.at_rank(high) if high <= n else None, n)


def _samples(a: Interval, b: Interval) -> str:
    if a.samples == b.samples:
        return f"{a.samples:,} latencies each"
    return f"{a.samples:,} and {b.samples:,} latencies"


def merged_runs(evidence: Iterable[Mapping[str, Any]]) -> int:
    """The runs each result's histogram adds up (the fewest of any): 1, or those `accept-order merge` added (their
    merged_from: runs_in)."""
    return min((runs_in(seen.get("merged_from")) for seen in evidence), default=1)


NESTED_AT_MOST = 64  # merges of merges followed this deep; a file deeper than any merge makes counts the rest as one


def runs_in(merged: Any, depth: int = 0) -> int:
    """The runs a merged_from holds: each file one after another adds its own, one run or those its own merged_from
    held (results/merge_nested.py: a merge of ab.json, itself a.json and b.json merged, and c.json holds 3; a file
    merged before each entry kept its own reads 2); files measured at once (--concurrent) are one run's several
    client hosts: as many runs as the most any of them holds. 1 for a run's own result."""
    files = merged.get("files") if isinstance(merged, Mapping) else None
    if not isinstance(files, list) or not files or depth > NESTED_AT_MOST:
        return 1
    each = [_runs_of(f, depth + 1) for f in files]
    return max(each) if merged.get("concurrent") else sum(each)


def _runs_of(entry: Any, depth: int) -> int:
    """One merged_from entry's runs: those its own merged_from holds, else the count kept in its place where a merge
    deeper than merge_nested.KEPT_LEVELS dropped it ('runs'), else 1."""
    below = entry.get("merged_from") if isinstance(entry, Mapping) else None
    if isinstance(below, Mapping) and isinstance(below.get("files"), list) and below["files"]:
        return runs_in(below, depth)
    kept = entry.get("runs") if isinstance(entry, Mapping) else None
    return kept if type(kept) is int and kept >= 1 else 1


def _each(runs: int) -> str:
    """How many runs each histogram holds: a merge's are in one histogram, as untested from run to run."""
    return "one run each" if runs <= 1 else f"{runs} runs each, merged into one histogram"


def pair_sureness(first: str, a: LatencyHistogram, second: str, b: LatencyHistogram, word: str, runs: int = 1) -> str:
    """How sure 'first's tail is lower than second's' is, one run each (or `runs` merged), on the figure `word`
    ("p99" or "p99.9"): within what the runs' own samples tell apart, or apart by more but untested from run
    to run."""
    q = float(word[1:])
    ia, ib = percentile_interval(a, q), percentile_interval(b, q)
    intervals = f"95% intervals {ia.text()} and {ib.text()} ms"
    if ia.overlaps(ib):
        return (
            f"How sure: not even within these runs: {first}'s and {second}'s {word}s are within what their own "
            f"samples can tell apart ({intervals} overlap, {_samples(ia, ib)}): {REPEAT} says whether they differ"
        )
    return (
        f"How sure: {_each(runs)}. {first}'s and {second}'s {word}s are apart beyond their own samples ({intervals}, "
        f"{_samples(ia, ib)}), but runs of the same settings can differ by more on a busy machine, which "
        f"{'one run' if runs <= 1 else 'one histogram'} cannot show: {REPEAT} says in how many runs it holds, and how "
        "significantly"
    )


def _word(first: str, second: str, histograms: Mapping[str, LatencyHistogram]) -> str | None:
    """The percentile the lower tail shows on (p99, else p99.9); None where it is lower on neither."""
    pair = Pair(first, second, histogram_figures(histograms[first]), histogram_figures(histograms[second]))
    return next((word for word in ("p99", "p99.9") if word in pair.lower("a")), None)


# Where the lower tail is lower by less than the runs' own samples tell apart: said so in the verdict, not only
# below it in How sure, and with what would tell them apart (a pick surer than its How sure misleads).
NOT_APART = "by less than the runs' own samples can tell apart"


def tell_apart(them: str) -> str:
    """What would tell `them` (the caps, the modes) apart where their samples cannot: more latencies narrow a
    percentile's interval, more rounds test the difference from run to run."""
    more = "a larger load (more latencies: a larger -n or --duration)"
    return f"{more} or more rounds ({REPEAT}) would tell {them} apart"


def _least_told(
    lower: Sequence[str], higher: Sequence[str], histograms: Mapping[str, LatencyHistogram]
) -> tuple[str, str, str | None, bool]:
    """The pair across `lower` and `higher` least told apart (no percentile lower, then intervals that overlap:
    a farther run with a spread tail or fewer latencies can overlap where the closest does not), else the
    closest (the highest p99 of `lower`, the lowest of `higher`); the percentile the lower one is lower on (None:
    neither p99 nor p99.9), and whether its intervals are apart."""

    def told_apart(pair: tuple[str, str]) -> tuple[int, int]:
        word = _word(*pair, histograms)
        a, b = (histograms[name] for name in pair)
        apart = word is not None and not percentile_interval(a, float(word[1:])).overlaps(
            percentile_interval(b, float(word[1:]))
        )
        return (word is not None) + apart, b.percentile(99) - a.percentile(99)

    first, second = min(((f, s) for f in lower for s in higher), key=told_apart)
    return first, second, _word(first, second, histograms), told_apart((first, second))[0] == 2


def samples_apart(lower: Sequence[str], higher: Sequence[str], histograms: Mapping[str, LatencyHistogram]) -> bool:
    """False where the runs' own samples cannot tell some of `lower` from some of `higher` on the percentile it is
    lower on (their ~95% intervals overlap: How sure's 'not even within these runs'). True where they can, or
    where no percentile is lower (deviation only: no interval to read, How sure says one run cannot tell)."""
    if not lower or not higher:
        return True
    _, _, word, apart = _least_told(lower, higher, histograms)
    return word is None or apart


def lower_sureness(
    lower: Sequence[str], higher: Sequence[str], histograms: Mapping[str, LatencyHistogram], runs: int = 1
) -> str:
    """How sure it is that each of `lower` has a lower tail than each of `higher`, one run each (or `runs`
    merged): told on the pair across them least told apart (_least_told)."""
    if not lower or not higher:
        return no_winner_sureness(runs)
    first, second, word, _ = _least_told(lower, higher, histograms)
    if word is None:  # lower on deviation or p99.9's neighbours only: no percentile to read an interval of
        return (
            f"How sure: {_each(runs)}, which cannot tell this from run-to-run variation: {REPEAT} says whether it holds"
        )
    return pair_sureness(first, histograms[first], second, histograms[second], word, runs)


def no_winner_sureness(runs: int = 1) -> str:
    return f"How sure: {_each(runs)}; {REPEAT} says whether that holds from run to run"


def tail_sureness(verdict: TailVerdict, histograms: Mapping[str, LatencyHistogram], runs: int = 1) -> str:
    """The sentence for latency --modes' tail verdict ('' where it compared no tails): `histograms` by the
    names the verdict uses; `runs`: how many each holds (merged_runs)."""
    if not verdict.ratios:  # nothing compared: one run only, one that served everything, all cut short
        return ""
    if verdict.tightest is None:
        return no_winner_sureness(runs)
    return lower_sureness([verdict.tightest], list(verdict.ratios), histograms, runs)
