"""Verdicts that know their own noise (pyperf is the model): the same comparison repeated, interleaved
(A B A B, not A A B B), each figure as its median and range, and a verdict that says how many rounds agree.

A latency comparison is judged on the whole tail, never one number: a variant has the tightest tail in a
round only when its p99, its p99.9 and its deviation are all the lowest (or within CLEAR of the lowest).
Unless one variant wins AGREE of the rounds, the verdict is "inconclusive", with what to change.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .tails import CLEAR

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
    sweep's runs share a label and differ by accept batch: that names them then."""
    labels = [r.server.label for r in row]
    if len(set(labels)) == len(labels):
        return labels
    return [f"{r.server.label} accept-batch {r.server.accept_batch or 'none'}" for r in row]


def _tail(result: Any) -> tuple[float, float, float]:
    h = result.histogram
    return float(h.percentile(99)), float(h.percentile(99.9)), float(h.stdev_us)


def tightest(round_results: Sequence[Any]) -> str | None:
    """The variant whose p99, p99.9 and deviation are all within CLEAR of the lowest of each; None if none
    or several are (no one tail is tighter in this round)."""
    names = names_of(round_results)
    runs = [(name, r) for name, r in zip(names, round_results, strict=True) if r.ok]
    if len(runs) < 2:
        return None
    tails = {name: _tail(r) for name, r in runs}
    lows = [min(t[i] for t in tails.values()) for i in range(3)]
    best = [label for label, t in tails.items() if all(t[i] <= lows[i] * CLEAR for i in range(3))]
    return best[0] if len(best) == 1 else None


def latency_stability(rounds: Sequence[Sequence[Any]]) -> Stability:
    """How many rounds name the same tightest tail, with the p99 ratios of the others to it."""
    n = len(rounds)
    winners = Counter(w for w in (tightest(r) for r in rounds) if w is not None)
    if not winners:
        return Stability(
            f"no variant had the tightest p99, p99.9 and deviation together in any of {n} runs: no clear "
            "difference at this size",
            False,
            0,
            n,
            None,
        )
    label, agree = winners.most_common(1)[0]
    ratios = []
    for r in rounds:
        by = {name: x for name, x in zip(names_of(r), r, strict=True) if x.ok}
        if label in by:
            mine = by[label].histogram.percentile(99)
            others = [x.histogram.percentile(99) for lab, x in by.items() if lab != label]
            if others and mine > 0:
                ratios.append(min(others) / mine)
    ratio = f"; the next p99 was {Spread.of(ratios).text(fmt='{:.2f}')}× its p99" if ratios else ""
    if agree >= AGREE * n:
        return Stability(f"{label} has the tightest tail in {agree}/{n} runs{ratio}", True, agree, n, label)
    rivals = ", ".join(f"{w} in {k}" for w, k in winners.most_common() if w != label)
    text = (
        f"inconclusive at this size: {label} had the tightest tail in {agree}/{n} runs"
        + (f", {rivals}" if rivals else "")
        + f"{ratio}; try more connections (-n), --pin, or more --repeat"
    )
    return Stability(text, False, agree, n, label)


def _pattern(text: str) -> str:
    """A verdict's pattern without its measured figures (a herd's 2.8 or 3.0 workers is the same herd)."""
    return re.sub(r"\d+(\.\d+)? workers woken per connection", "workers woken per connection", text)


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
