"""Repeated comparisons, interleaved: round 1 runs every variant once, then round 2, ... (A B A B, not
A A B B), so a slow drift of the machine lands on every variant alike. Interrupted, or stopped by an error,
the rounds that finished are kept (a round cut short is left out: its variants would not be comparable)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ...core import environment
from ...core.errors import AcceptOrderError
from ..session import RunInterrupted, RunStopped

V = TypeVar("V")
R = TypeVar("R")


def interleaved(
    variants: Sequence[V], rounds: int, run_one: Callable[[V], R], on_round: Callable[[int], None] | None = None
) -> list[list[R]]:
    """`on_round(k)` is told each round's number (1 to `rounds`) before it starts: progress says "run k of N"."""
    done: list[list[R]] = []
    row: list[R] = []
    try:
        for number in range(1, rounds + 1):
            if on_round:
                on_round(number)
            row = []
            for variant in variants:
                row.append(run_one(variant))
            done.append(row)
    except RunInterrupted as stop:
        # A signal after the round's last load carries that variant's whole result: the round is complete.
        whole = [r for r in stop.results if not getattr(r, "interrupted", True)]
        if len(row) < len(variants) and len(row) + len(whole) == len(variants):
            done.append([*row, *whole])
        raise RunInterrupted(done, stop.cause) from None
    except KeyboardInterrupt as cause:
        if not done:
            raise
        raise RunInterrupted(done, cause) from None
    except AcceptOrderError as error:
        # A round that an error cut short is left out, as an interrupted one is; the rounds before it stand.
        why = error.cause if isinstance(error, RunStopped) else error
        if not done:
            raise why from None
        raise RunStopped(done, why) from why
    return done


def snapshot() -> dict[str, Any]:
    return environment.machine_state()
