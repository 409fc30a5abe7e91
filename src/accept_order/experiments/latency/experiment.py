"""Latency under a closed-loop load: `latency` (one run), `latency --modes` (latency-compare: one per mode)
and `sweep` (one per cap on the connections accepted per wakeup)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from rich.console import RenderableType

from ...analysis.losses import sweep_name
from ...analysis.one_run import NOT_APART, merged_runs, samples_apart, tail_sureness, tell_apart
from ...analysis.tails import TIGHTEST, TailVerdict, tail_verdict
from ...core.totals import loops_ran
from ...results import export
from .. import SWEEP_KIND
from ..generator_pace import every_run_paced, latency_paced_said
from ..parts import Experiment, lazy
from .compare_report import compare_report
from .first_requests import first_csv
from .held_nothing import held_nothing_notes
from .kept_report import kept_csv
from .machine_share import machine_note
from .model_report import model_csv
from .model_verdict import model_figures
from .pool_split import pool_split_note
from .report import latency_report
from .result import LATENCY_COMPARE_SHAPE, LATENCY_SHAPE, SWEEP_SHAPE, LatencyCompareResult, LatencyResult, SweepResult
from .sweep_report import sweep_report
from .work_share import work_note

_PLOT = "accept_order.experiments.latency.plot"
_T = TypeVar("_T")


def summaries(runs: list[dict[str, Any]]) -> str:
    """One row per run: its percentiles, throughput and the load generator's CPU per connection (rebuilt
    from the histogram and the drivers, so a file saved before a figure was added has it too), and the loop
    it ran on (empty for files before 0.3, whose drivers ran epoll)."""
    rows = []
    for run in runs:
        result = LatencyResult.from_dict(run)
        rows.append({"run": export.label(run), **result.summary(), "loop": loops_ran(result.drivers) or None})
    return export.flat_table(rows)


_TABLES = {
    "histogram": export.histogram,
    "workers": export.workers,
    "summary": summaries,
    "model": model_csv,
    "connections": kept_csv,  # kept connections per worker (empty for one request per connection)
    "first_requests": first_csv,  # their first requests apart from the later ones, per worker and all
    "hosts": export.hosts,  # --clients: each client host's figures (empty for a load driven from one host)
}


def _by_cap(table: Callable[[list[dict[str, Any]]], _T]) -> Callable[[list[dict[str, Any]]], _T]:
    """A sweep's table with each run named by its cap ('4 limit', as its report names them): its runs share one
    server and mode, so their label ('epoll') named none apart, and every cap's latencies in the histogram table
    read as one run's (a sweep --repeat's rows were already named so: repeated.py)."""

    def named(runs: list[dict[str, Any]]) -> _T:
        return table([{**run, export.RUN_NAME: sweep_name(LatencyResult.from_dict(run))} for run in runs])

    return named


_SWEEP_TABLES = {name: _by_cap(table) for name, table in _TABLES.items()}


def stopped_between(result: LatencyCompareResult | SweepResult) -> LatencyResult | None:
    """The run a stop came after, where it came between two runs (none of them cut short: each run's own
    note says that): the runs planned after it were not run, which nothing else in the file says."""
    if not result.interrupted or not result.runs or any(r.interrupted for r in result.runs):
        return None
    return result.runs[-1]


def compare_verdict(result: LatencyCompareResult) -> TailVerdict:
    """The tails' verdict, saying where a stop between two modes left the rest unrun ('need at least two runs'
    of one whole run and nothing more said the second served nothing), and the workers that held no
    connection of a run over kept connections where the others carried their share (its tail is theirs)."""
    verdict = tail_verdict(result.runs)
    # the runs whose tails were compared (not one that lost connections), as burst --repeat reads those that served
    # all: where only one served every connection, no tail was compared and none is paced
    compared = [r for r in result.runs if r.server.label in {verdict.tightest, *verdict.ratios}]
    if verdict.tightest is not None and verdict.ratios and every_run_paced(compared):  # as burst --repeat says it
        which = "run" if len(compared) == len(result.runs) else "run compared"
        said = f"no mode ranked: {latency_paced_said(which)}; on the figures, {verdict.text}"
        verdict = replace(verdict, tightest=None, text=said, kind="paced")
    histograms = {r.server.label: r.histogram for r in result.runs}
    said = verdict.text
    if (tightest := verdict.tightest) is not None and not samples_apart([tightest], list(verdict.ratios), histograms):
        # as sweep's verdict says a cap that led by less (sweep_verdict._not_apart): the figures, then how sure
        said = said.replace(TIGHTEST, f"{TIGHTEST}, {NOT_APART}", 1) + f"; {tell_apart('the modes')}"
    said += held_nothing_notes(result.runs)
    after = stopped_between(result)
    if after is not None:
        said += f" (stopped after {after.server.label}: the modes after it were not run)"
    # one run of each mode: how sure the comparison is, from the runs' own samples (analysis/one_run.py)
    runs = merged_runs(r.evidence for r in result.runs)  # a merged file's runs are one histogram each
    sure = tail_sureness(verdict, histograms, runs)
    said = f"{said}. {sure}" if sure else said
    split = pool_split_note(result.runs)  # a pool's split is its workers' load to the end: the tails do not say it
    said = f"{said}. {split}" if split else said
    machine = machine_note(result.runs)  # others' CPU differing between the runs
    said = f"{said}. {machine[0].upper()}{machine[1:]}" if machine else said
    work = work_note(result.runs)  # the CPU a request each burned for one --work
    return replace(verdict, text=f"{said}. {work[0].upper()}{work[1:]}" if work else said)


def latency_compare_report(result: LatencyCompareResult) -> RenderableType:
    return compare_report(result.runs, result.skipped, compare_verdict(result))


def compare_verdicts(result: LatencyCompareResult) -> dict[str, Any]:
    """What a saved comparison adds for other tools: the tails' verdict, the model's fixed path and sentence."""
    return {"verdict": compare_verdict(result).to_dict()} | model_figures(result.runs)


def latency_figures(result: LatencyResult) -> dict[str, Any]:
    """What a saved run adds for other tools: its model's fixed path and sentence, as its Model table has them."""
    return model_figures([result])


def sweep_figures(result: SweepResult) -> dict[str, Any]:
    """What a saved sweep adds for other tools: its model's fixed path and sentence, its runs named by cap."""
    return model_figures(result.runs, sweep_name)


def sweep_result_report(result: SweepResult) -> RenderableType:
    after = stopped_between(result)
    between = None if after is None else f"interrupted after the {sweep_name(after)} cap"
    return sweep_report(result.runs, result.stopped or between)


LATENCY: Experiment[LatencyResult] = Experiment(
    kind="latency",
    v1="concurrent",
    mergeable=True,
    load=LatencyResult.from_dict,
    shape_of=lambda: LATENCY_SHAPE,
    report=latency_report,
    figure=lazy(_PLOT, "latency_figure"),
    draws_cdf=True,
    tables=_TABLES,
    latency_runs=export.histograms,
    derived=latency_figures,
)
LATENCY_COMPARE: Experiment[LatencyCompareResult] = Experiment(
    kind="latency-compare",
    v1="concurrent",
    mergeable=True,
    load=LatencyCompareResult.from_dict,
    shape_of=lambda: LATENCY_COMPARE_SHAPE,
    report=latency_compare_report,
    figure=lazy(_PLOT, "latency_compare_figure"),
    draws_cdf=True,
    tables=_TABLES,
    latency_runs=export.histograms,
    several=True,
    derived=compare_verdicts,
)
SWEEP: Experiment[SweepResult] = Experiment(
    kind=SWEEP_KIND,
    v1="concurrent",
    mergeable=True,
    load=SweepResult.from_dict,
    shape_of=lambda: SWEEP_SHAPE,
    report=sweep_result_report,
    figure=lazy(_PLOT, "sweep_figure"),
    tables=_SWEEP_TABLES,
    latency_runs=_by_cap(export.histograms),
    several=True,
    derived=sweep_figures,
)
