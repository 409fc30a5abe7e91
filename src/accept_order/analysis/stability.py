"""Verdicts that know their own noise (pyperf is the model): the same comparison repeated, interleaved
(A B A B, not A A B B), each figure as its median and range, and a verdict that says how many rounds agree.

A repeated latency comparison is reported pair by pair: who had the lower p99, and the lower whole tail
(p99, p99.9 and deviation together), in how many runs, and whether the p99s differ significantly (a
two-sample t-test at 95%, pyperf's is_significant: analysis/significance.py). The overall line names a
variant lowest (or highest) only when it was so in AGREE of the runs, and says against which others that is
significant; a variant that lost connections in a run is never that run's lowest (its latencies cover only
what it served: experiments/latency/sweep_verdict.py).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .losses import lost_connections, sweep_name
from .significance import TTest, t_test

AGREE = 0.8  # share of rounds that must agree for a verdict


@dataclass(frozen=True)
class Spread:
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(statistics.median(values), min(values), max(values))

    def text(self, scale: float = 1.0, fmt: str = "{:.2f}") -> str:
        m, lo, hi = (fmt.format(v / scale) for v in (self.median, self.low, self.high))
        return f"{m} ({lo}-{hi})"


@dataclass(frozen=True)
class Stability:
    text: str
    conclusive: bool
    agree: int
    rounds: int
    winner: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def names_of(row: Sequence[Any]) -> list[str]:
    """The variants' names in a round (the same in every round: variant i is the i-th run of each). A
    sweep's runs share a label and differ by accept batch: seed 001's row names ('4 limit', 'no limit') name
    them then."""
    labels = [r.server.label for r in row]
    if len(set(labels)) == len(labels):
        return labels
    if len(set(labels)) == 1:
        return [sweep_name(r) for r in row]
    return [f"{r.server.label} accept-batch {r.server.accept_batch or 'none'}" for r in row]


def _tail(result: Any) -> tuple[float, float, float]:
    h = result.histogram
    return float(h.percentile(99)), float(h.percentile(99.9)), float(h.stdev_us)


@dataclass(frozen=True)
class PairCount:
    """Two variants over the runs where both served: a's p99 wins first (`a` is the one that won more)."""

    a: str
    b: str
    runs: int
    p99: tuple[int, int]  # runs where a's p99 was lower, where b's was
    tail: tuple[int, int]  # runs where a's p99, p99.9 and deviation were all lower, where b's were
    means: tuple[float, float]  # mean p99 over those runs, µs
    test: TTest

    def text(self) -> str:
        if not self.runs:
            return f"{self.a} vs {self.b}: no run where both served"
        return (
            f"{self.a} vs {self.b}: lower p99 in {self.p99[0]}/{self.runs} runs ({self.b} in {self.p99[1]}), lower "
            f"whole tail in {self.tail[0]}/{self.runs} ({self.b} in {self.tail[1]}); mean p99 "
            f"{self.means[0] / 1000:.2f} vs {self.means[1] / 1000:.2f} ms, {self.test.text()}"
        )


def pair_count(a: str, b: str, rounds: Sequence[dict[str, Any]]) -> PairCount:
    """Count the runs each of a and b won, on p99 and on the whole tail; t-test their p99s."""
    both = [(r[a], r[b]) for r in rounds if a in r and b in r]
    tails = [(_tail(x), _tail(y)) for x, y in both]
    p99 = (sum(x[0] < y[0] for x, y in tails), sum(y[0] < x[0] for x, y in tails))
    tail = (
        sum(all(u < v for u, v in zip(x, y, strict=True)) for x, y in tails),
        sum(all(v < u for u, v in zip(x, y, strict=True)) for x, y in tails),
    )
    pa, pb = [x[0] for x, _ in tails], [y[0] for _, y in tails]
    means = (statistics.fmean(pa), statistics.fmean(pb)) if both else (0.0, 0.0)
    test = t_test(pa, pb)
    if (p99[1], means[0]) > (p99[0], means[1]):  # b won more runs (or as many, with a lower mean): b first
        return PairCount(b, a, len(both), p99[::-1], tail[::-1], means[::-1], t_test(pb, pa))
    return PairCount(a, b, len(both), p99, tail, means, test)


@dataclass(frozen=True)
class LatencyStability(Stability):
    """The overall line (Stability's text) and one line per pair of variants."""

    pairs: tuple[str, ...] = ()


def _extreme(rows: Sequence[dict[str, Any]], lowest: bool) -> Counter[str]:
    """Per run, the one variant with the lowest (or highest) p99; a tie names none. The lowest is chosen
    only among variants that served every connection of that run (the others rank after them)."""
    out: Counter[str] = Counter()
    for row in rows:
        p99 = {n: _tail(r)[0] for n, r in row.items() if not (lowest and lost_connections(r))}
        if len(row) < 2 or not p99:
            continue
        edge = (min if lowest else max)(p99.values())
        named = [n for n, v in p99.items() if v == edge]
        if len(named) == 1:
            out[named[0]] += 1
    return out


def _against(name: str, pairs: Sequence[PairCount], lower: bool) -> tuple[str, bool]:
    """Against which others `name`'s p99 is significantly lower (higher), and whether against all."""
    mine = [p for p in pairs if name in (p.a, p.b)]
    word = "lower" if lower else "higher"
    sig = []
    for p in mine:
        other = p.b if p.a == name else p.a
        mean, theirs = (p.means[0], p.means[1]) if p.a == name else (p.means[1], p.means[0])
        if p.test.significant and (mean < theirs) == lower:
            sig.append(other)
    if sig and len(sig) == len(mine):
        return f", significantly {word} than {'every other' if len(mine) > 1 else sig[0]} (t-test at 95%)", True
    if sig:
        return f", significantly {word} than {', '.join(sig)} only (t-test at 95%)", False
    if all(p.test.critical is None for p in mine):  # one run each (a --repeat Ctrl-C cut to one round): no test
        return ", its significance untested (one run each: testing needs two or more)", False
    return f", not significantly {word} than {'any other' if len(mine) > 1 else 'the other'} (t-test at 95%)", False


def latency_stability(rounds: Sequence[Sequence[Any]]) -> LatencyStability:
    """Who beat whom in how many runs, pair by pair, and whether it is significant; the overall line names
    the lowest and the highest p99 when one was so in AGREE of the runs."""
    n = len(rounds)
    rows = [{name: x for name, x in zip(names_of(r), r, strict=True) if x.ok} for r in rounds]
    names = names_of(rounds[0]) if rounds else []
    pairs = [pair_count(a, b, rows) for i, a in enumerate(names) for b in names[i + 1 :]]
    lost = Counter(name for r in rounds for name, x in zip(names_of(r), r, strict=True) if lost_connections(x))
    low, high = _extreme(rows, lowest=True), _extreme(rows, lowest=False)
    claims: list[str] = []
    conclusive = False
    winner, agree = low.most_common(1)[0] if low else (None, 0)
    if winner is not None and agree >= AGREE * n:
        against, conclusive = _against(winner, pairs, lower=True)
        among = " of the variants that served every connection" if any(lost.values()) else ""
        claims.append(f"{winner} has the lowest p99{among} in {agree}/{n} runs{against}")
    else:
        winner = None
    worst, k = high.most_common(1)[0] if high else (None, 0)
    if worst is not None and k >= AGREE * n and (len(names) > 2 or winner is None):
        against, significant = _against(worst, pairs, lower=False)
        claims.append(f"{worst} has the highest p99 in {k}/{n} runs{against}")
        conclusive = conclusive or significant
    if not claims:
        seen = ", ".join(f"{w} in {c}" for w, c in low.most_common()) or "none"
        # -n counts requests where connections are kept, which its help calls connections: said only then
        kept = any(getattr(getattr(x, "load", None), "requests_per_connection", 1) != 1 for r in rounds for x in r)
        longer = "-n, which counts requests over kept connections, or --duration" if kept else "-n or --duration"
        claims.append(
            f"inconclusive at this size: no variant had the lowest or the highest p99 in {AGREE:.0%} of the {n} runs "
            f"(lowest: {seen}); try longer runs ({longer}), --pin, or more --repeat"
        )
    losers = [f"{name} lost connections in {lost[name]}/{n} runs (its latencies cover only what it served)"
              for name in names if lost[name]]  # fmt: skip
    text = "; ".join(claims + losers)
    return LatencyStability(text, conclusive, agree if winner else 0, n, winner, tuple(p.text() for p in pairs))


def _pattern(text: str) -> str:
    """A verdict's pattern without its measured figures (a herd's 2.8 or 3.0 workers is the same herd)."""
    # said as what every such run shows (a herd is said from 1.5 woken: wakeups.HERD_THRESHOLD), its figures in the
    # table's sleeps/conn: 'thundering herd (workers woken per connection)' read as a figure gone missing
    return re.sub(r"\d+(\.\d+)? workers woken per connection", "more than one worker woken per connection", text)


def order_stability(rounds: Sequence[Sequence[Any]]) -> dict[str, Stability]:
    """Per variant: how many rounds gave the same order verdict (pattern)."""
    by_label: dict[str, list[str]] = {}
    for r in rounds:
        for name, result in zip(names_of(r), r, strict=True):
            by_label.setdefault(name, []).append(_pattern(result.verdict.pattern))
    out = {}
    for label, patterns in by_label.items():
        pattern, agree = Counter(patterns).most_common(1)[0]
        n = len(patterns)
        conclusive = agree >= AGREE * n
        text = f"{pattern} in {agree}/{n} runs" + ("" if conclusive else ": the runs disagree")
        out[label] = Stability(text, conclusive, agree, n, pattern)
    return out


def agreement(outcomes: Sequence[str | None], claim: str, none: str, advice: str = "try more --repeat") -> Stability:
    """How many runs had the same outcome (None: a run that named none, e.g. two modes tied): conclusive
    when one outcome holds in AGREE of the runs. The text is "OUTCOME CLAIM in k/n runs", as the latency
    and order verdicts say it; when no outcome holds in AGREE, "inconclusive: ..." with the others' counts;
    when no run named one, "NONE in any of n runs"."""
    n = len(outcomes)
    counts = Counter(o for o in outcomes if o is not None)
    said = f" {claim}" if claim else ""
    if not counts:
        return Stability(f"{none} in any of {n} runs", False, 0, n, None)
    top, agree = counts.most_common(1)[0]
    if agree >= AGREE * n:
        return Stability(f"{top}{said} in {agree}/{n} runs", True, agree, n, top)
    others = [f"{o} in {k}" for o, k in counts.most_common() if o != top]
    undecided = n - sum(counts.values())
    others += [f"none in {undecided}"] if undecided else []
    text = f"inconclusive: {top}{said} in {agree}/{n} runs" + "".join(f", {o}" for o in others)
    return Stability(text + (f"; {advice}" if advice else ""), False, agree, n, top)
