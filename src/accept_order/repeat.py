"""Repeated comparisons, interleaved: round 1 runs every variant once, then round 2, ... (A B A B, not
A A B B), so a slow drift of the machine lands on every variant alike. Interrupted, the rounds that
finished are kept (a round cut short is left out: its variants would not be comparable)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from . import environment
from .session import RunInterrupted

V = TypeVar("V")
R = TypeVar("R")

STEAL = 0.05  # the hypervisor took this share of the CPUs during the runs: figures from a stolen machine
BUSY = 0.5  # a 1-minute load average of half the CPUs before the runs: other work is competing


def interleaved(variants: Sequence[V], rounds: int, run_one: Callable[[V], R]) -> list[list[R]]:
    done: list[list[R]] = []
    try:
        for _ in range(rounds):
            done.append([run_one(v) for v in variants])
    except RunInterrupted as stop:
        raise RunInterrupted(done, stop.cause) from None
    except KeyboardInterrupt as cause:
        if not done:
            raise
        raise RunInterrupted(done, cause) from None
    return done


def machine_warnings(before: dict[str, Any], after: dict[str, Any], cpus: int) -> list[str]:
    """pyperf-style warnings about the machine itself: busy, or moving, or stolen from."""
    notes = []
    # The runs' own workers and load generator raise the load average while they run: only what it was
    # before they started says whether other work was competing.
    la0 = before.get("load_average")
    if la0 and la0[0] >= BUSY * cpus:
        notes.append(f"the machine was already busy: load average {la0[0]:.1f} on {cpus} CPUs before the runs")
    j0, j1 = before.get("cpu_jiffies"), after.get("cpu_jiffies")
    if j0 and j1 and j1["total"] > j0["total"]:
        steal = (j1["steal"] - j0["steal"]) / (j1["total"] - j0["total"])
        if steal >= STEAL:
            notes.append(f"the hypervisor took {100 * steal:.0f}% of the CPUs (steal time) during the runs")
    return notes


def latency_warnings(rounds: Sequence[Sequence[Any]]) -> list[str]:
    """Too few samples for the percentile shown; a load generator that waited for a CPU."""
    notes = []
    smallest = min((r.histogram.count for row in rounds for r in row), default=0)
    if smallest and smallest < 1000:
        notes.append(f"a run had {smallest} samples: its p99.9 is one of its slowest few; use -n 10000 or more")
    waited = [
        (d.runqueue_s or 0) / d.wall_s for row in rounds for r in row for d in r.drivers if d.wall_s and d.runqueue_s
    ]
    if waited and max(waited) > 0.25:
        notes.append(
            f"the load generator waited for a CPU up to {100 * max(waited):.0f}% of the time: client-side delay "
            "is in these latencies"
        )
    return notes


def snapshot() -> dict[str, Any]:
    return environment.machine_state()
