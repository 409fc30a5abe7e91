"""What `--repeat N` does the same way in every command that has it: run the variants in interleaved
rounds, report medians and agreement, save a `repeat` document (the rounds, and the machine before/after)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from .common import keep_partial, report_and_save
from .hosts_lost import end_if_unmeasured
from .served_nothing import Tally, of_totals
from .types import IntRange

if TYPE_CHECKING:
    from .progress import RunProgress  # imported where --repeat runs: `run` without it shows no rounds


def repeat_option(variants: str | None = "modes", given_by: str = "") -> Callable[[Any], Any]:
    """--repeat, said for what the command runs: `variants` it compares (modes, caps), interleaved; None: one
    run of one thing (run); `given_by`: the option that makes it a comparison (latency's --modes)."""
    if variants is None:
        help = "Run it this many times and report the median, the range and how many runs agree."
    else:
        interleaved = f"the {variants} interleaved (A B A B)"
        if given_by:
            interleaved = f"with {given_by}, {interleaved}"
        help = f"Run it this many times, {interleaved}, and report medians, ranges and how many runs agree."
    return click.option("--repeat", type=IntRange(1, 1000), default=1, show_default=True, help=help)


def run_repeated(
    of: str,
    variants: Sequence[Any],
    rounds: int,
    run_one: Callable[[Any], Any],
    skipped: dict[str, str],
    json_path: str | None,
    progress: RunProgress | None = None,
    notes: Sequence[str] = (),
    tally: Callable[[Any], Tally] | None = None,
) -> None:
    """Run the rounds, then save and report them; `tally` reads one run for end_if_nothing_served (each round's
    run that served nothing named after the file, exit 1; cli/served_nothing.py), None: of_totals (a load's)."""
    from ..api import repeat as interleaved
    from ..experiments.repeat.experiment import report
    from ..experiments.repeat.result import repeated
    from ..experiments.repeat.run import snapshot
    from .progress import RunProgress

    before = snapshot()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

    def save(done: Sequence[Sequence[Any]], cut: Sequence[Any] = (), **stop: Any) -> None:
        """The rounds that finished, the runs of the one a stop cut short, and the stop (interrupted, stopped)."""
        machine = {"before": before, "after": snapshot()}
        result = repeated(
            of, done, skipped, machine, cpus, notes=notes, cut=cut, asked=rounds, variants=len(variants), **stop
        )
        report_and_save(lambda: report(result), json_path, "repeat", result)

    def save_so_far(kept: Sequence[Any], **stop: Any) -> None:
        """What a stop left (one SoFar): the rounds that finished, and the round it cut short apart."""
        (so_far,) = kept
        save(so_far.rounds, so_far.cut, **stop)

    # "run k of N" counts every run of every round; the bars' labels read it (their own `progress`)
    progress = progress or RunProgress(0)
    progress.total = rounds * len(variants)

    def counted(variant: Any) -> Any:
        progress.next()
        return run_one(variant)

    kept = keep_partial(
        lambda kept: save_so_far(kept, interrupted=True), lambda kept, why: save_so_far(kept, stopped=why)
    )
    with kept, progress.heartbeat():
        done = interleaved(variants, rounds, counted)
    save(done)
    read = tally or of_totals
    # each run of each round: one that served nothing is no measurement, however the others went
    runs = [(in_round(read(run), k), run) for k, round_runs in enumerate(done, 1) for run in round_runs]
    each = [(tally.label, run) for tally, run in runs]  # each run in its round
    end_if_unmeasured([tally for tally, _ in runs], done, json_path, each)


def in_round(tally: Tally, k: int) -> Tally:
    """`tally` named with its round: 'epoll (round 2)'."""
    return tally._replace(label=f"{tally.label} (round {k})")
