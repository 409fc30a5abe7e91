"""Which of several latency runs had the tighter tail, and by how much."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..experiments.latency.result import LatencyResult


@dataclass(frozen=True)
class TailVerdict:
    """Which mode had the tighter tail, and by how much (ratios of the others to it)."""

    tightest: str | None
    ratios: dict[str, dict[str, float]]  # mode -> {"p99": r, "dev": r, "avg": r} relative to tightest
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


CLEAR = 1.1  # tails within 10% of each other are no clear difference on a noisy machine


def _ratio(a: float, b: float) -> float:
    if b > 0:
        return a / b
    return 1.0 if a == 0 else math.inf


def tail_verdict(results: Sequence[LatencyResult]) -> TailVerdict:
    """The run with the smallest p99 (then deviation) and how the others compare: p99, dev, avg ratios."""
    runs = [r for r in results if r.ok]
    if len(runs) < 2:
        return TailVerdict(None, {}, "need at least two runs that served requests to compare tails")

    def key(r: LatencyResult) -> tuple[int, float]:
        return r.histogram.percentile(99), r.histogram.stdev_us

    best = min(runs, key=key)
    bh = best.histogram
    ratios: dict[str, dict[str, float]] = {}
    clauses = []
    for r in runs:
        if r is best:
            continue
        h = r.histogram
        rat = {
            "p99": _ratio(h.percentile(99), bh.percentile(99)),
            "dev": _ratio(h.stdev_us, bh.stdev_us),
            "avg": _ratio(h.mean_us, bh.mean_us),
        }
        ratios[r.server.label] = rat
        clauses.append(
            f"{r.server.label}'s p99 is {rat['p99']:.2f}× ({h.percentile(99) / 1000:.2f} vs "
            f"{bh.percentile(99) / 1000:.2f} ms) and its deviation {rat['dev']:.2f}× "
            f"({h.stdev_us / 1000:.2f} vs {bh.stdev_us / 1000:.2f} ms); average {rat['avg']:.2f}× "
            f"({h.mean_us / 1000:.2f} vs {bh.mean_us / 1000:.2f} ms)"
        )
    if all(r["p99"] < CLEAR and r["dev"] < CLEAR for r in ratios.values()):
        text = f"no clear difference in the tails (all within {100 * (CLEAR - 1):.0f}%): " + "; ".join(clauses)
        return TailVerdict(None, ratios, text)
    text = f"{best.server.label} has the tightest tail: " + "; ".join(clauses)
    return TailVerdict(best.server.label, ratios, text)
