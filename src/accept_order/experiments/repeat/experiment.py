"""`--repeat N` of run, compare, herd, latency and sweep: the variants in interleaved rounds, medians and
ranges, how many rounds agree, and what the machine did meanwhile."""

from __future__ import annotations

from rich.console import RenderableType

from .. import Experiment, lazy
from .report import repeat_report
from .result import REPEAT_SHAPE, RepeatResult


def report(result: RepeatResult) -> RenderableType:
    return repeat_report(result.of, result.rounds, result.skipped, result.machine, result.cpus)


REPEAT: Experiment[RepeatResult] = Experiment(
    kind="repeat",
    load=RepeatResult.from_dict,
    shape=REPEAT_SHAPE,
    report=report,
    figure=lazy("accept_order.experiments.repeat.plot", "repeat_figure"),
)
