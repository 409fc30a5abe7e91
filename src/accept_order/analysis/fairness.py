"""Fairness of a run: how evenly the workers shared the connections."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def tally(sequence: Iterable[int], workers: int) -> list[int]:
    counts = [0] * workers
    for w in sequence:
        counts[w] += 1
    return counts


def jain_index(counts: Sequence[int]) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one takes all."""
    total = sum(counts)
    squares = sum(c * c for c in counts)
    return (total * total) / (len(counts) * squares) if squares else 1.0


def max_min_share(counts: Sequence[int]) -> float | None:
    """Largest over smallest count; None when some worker served nothing (infinitely unfair)."""
    if not counts or min(counts) == 0:
        return None
    return max(counts) / min(counts)
