"""What `--repeat N` does the same way in every command that has it: run the variants in interleaved
rounds, report medians and agreement, save a `repeat` document (the rounds, and the machine before/after)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import click

from .common import keep_partial, report_and_save


def repeat_option() -> Callable[[Any], Any]:
    return click.option(
        "--repeat",
        type=click.IntRange(1, 1000),
        default=1,
        show_default=True,
        help="Run the comparison this many times, interleaved (A B A B), and report medians, ranges and how "
        "many runs agree.",
    )


def run_repeated(
    of: str,
    variants: Sequence[Any],
    rounds: int,
    run_one: Callable[[Any], Any],
    skipped: dict[str, str],
    json_path: str | None,
) -> None:
    from ..render.repeat import repeat_report
    from ..repeat import interleaved, snapshot

    before = snapshot()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

    def save(done: Sequence[Sequence[Any]], interrupted: bool = False) -> None:
        machine = {"before": before, "after": snapshot()}
        doc: dict[str, Any] = {
            "of": of,
            "rounds": [[r.to_dict() for r in row] for row in done],
            "skipped": skipped,
            "machine": machine,
        }
        if interrupted:
            doc["interrupted"] = True
        report_and_save(repeat_report(of, done, skipped, machine, cpus), json_path, "repeat", doc)

    with keep_partial(lambda done: save(done, interrupted=True)):
        done = interleaved(variants, rounds, run_one)
    save(done)
