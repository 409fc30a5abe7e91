"""Repeated comparisons, interleaved: round 1 runs every variant once, then round 2, ... (A B A B, not
A A B B), so a slow drift of the machine lands on every variant alike. Interrupted, or stopped by an error,
the rounds that finished are kept, and so is the round the stop cut short (SoFar.cut): its variants that
finished and the part of the one it stopped. That round stays apart from the others: its variants would not
be comparable with theirs (one has a run more), but what it measured is not lost (`ramp --modes a,b` is one
round: a Ctrl-C in b's ramp must not lose a's)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ...core import environment
from ...core.errors import AcceptOrderError
from ..session import RunInterrupted, RunStopped

V = TypeVar("V")
R = TypeVar("R")


@dataclass(frozen=True)
class SoFar(Generic[R]):
    """What a stop left of the rounds (the one result a RunInterrupted or RunStopped from `interleaved`
    carries): `rounds`, those that finished; `cut`, the runs of the round it cut short, in the variants'
    order: those that finished, then the one it stopped when that run kept a part (marked interrupted or
    stopped); `asked`, the rounds asked for; `variants`, how many each round runs."""

    rounds: list[list[R]]
    cut: list[R] = field(default_factory=list)
    asked: int = 0
    variants: int = 0


def whole(run: Any) -> bool:
    """A run that reached its end (not cut by a signal, nor stopped by an error after part of its load)."""
    return not getattr(run, "interrupted", True) and getattr(run, "stopped", None) is None


def interleaved(
    variants: Sequence[V], rounds: int, run_one: Callable[[V], R], on_round: Callable[[int], None] | None = None
) -> list[list[R]]:
    """`on_round(k)` is told each round's number (1 to `rounds`) before it starts: progress says "run k of N".
    A stop raises RunInterrupted or RunStopped with one SoFar (none when nothing was measured)."""
    done: list[list[R]] = []
    row: list[R] = []

    def so_far(parts: Sequence[R]) -> list[SoFar[R]]:
        cut = [*row, *parts]
        if len(row) < len(variants) and len(cut) == len(variants) and all(whole(r) for r in cut):
            done.append(cut)  # a stop after the round's last load, which carried its whole result
            cut = []
        return [SoFar(done, cut, rounds, len(variants))] if done or cut else []

    try:
        for number in range(1, rounds + 1):
            if on_round:
                on_round(number)
            row = []
            for variant in variants:
                row.append(run_one(variant))
            done.append(row)
            row = []
    except RunInterrupted as stop:
        raise RunInterrupted(so_far(stop.results), stop.cause) from None
    except KeyboardInterrupt as cause:
        kept = so_far([])
        if not kept:
            raise
        raise RunInterrupted(kept, cause) from None
    except AcceptOrderError as error:
        # the error's own partial run (a ramp's steps before it) is kept with the round it cut
        why = error.cause if isinstance(error, RunStopped) else error
        kept = so_far(error.results if isinstance(error, RunStopped) else getattr(error, "results", ()))
        if not kept:
            raise why from None
        raise RunStopped(kept, why) from why
    return done


def snapshot() -> dict[str, Any]:
    return environment.machine_state()
