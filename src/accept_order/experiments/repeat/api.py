"""--repeat's Python API: variants run in interleaved rounds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from .run import interleaved

V = TypeVar("V")
R = TypeVar("R")


def repeat(
    variants: Sequence[V], rounds: int, run_one: Callable[[V], R], on_round: Callable[[int], None] | None = None
) -> list[list[R]]:
    """`rounds` rounds, each running every variant once, interleaved (pyperf's way of sharing out drift);
    `on_round(k)` before round k starts."""
    return interleaved(variants, rounds, run_one, on_round)
