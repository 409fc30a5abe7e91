"""The queueing model's sentence for one latency run or a comparison: whether each run's measured p99 is within
what queueing alone predicts for it (model_check.predict, saved with the run), with the fixed path every connection
takes accounted for, what the run saw besides queueing where it is not (besides_queueing.py), and, for runs too
small to judge, why not; over repeated rounds, in how many queueing explained every mode."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ...analysis.model_check import (
    MIN_JUDGED,
    NOISE,
    SLOWEST,
    TOLERANCE,
    ModelCheck,
    agrees,
    clearly_above,
    percent,
    too_few,
)
from ...core.cgroup_cpu import throttled_said
from .besides_queueing import by_label, overload, something_else
from .kept_load_words import finished_unit
from .result import LatencyResult


def fixed_path_ms(runs: Sequence[LatencyResult]) -> float:
    """The time every connection took that queueing leaves out (set-up, the kernel, the client), in ms: the
    fastest measured connection beyond the fastest the model predicts. The same kernel and client serve every
    mode of one comparison, so the smallest of the runs' (0 when a model predates its minimum)."""
    each = [
        max(0.0, (r.histogram.min_us or 0) / 1000 - r.model.min_ms)
        for r in runs
        if r.model is not None and r.model.min_ms is not None and r.histogram.count
    ]
    return min(each) if each and len(each) == len(runs) else 0.0


def predicted_ms(model: ModelCheck, figure: str, fixed: float) -> float:
    """What the model predicts for one of its figures (p50_ms, p99_ms, p999_ms, dev_ms) with the fixed path every
    connection takes: the one source of the Model table's cells and of the sentence's 'the predicted' (the table
    showed the model's 40.7 where the sentence judged 45.50). A constant path moves every percentile, not the
    deviation."""
    value = float(getattr(model, figure))
    return value if figure == "dev_ms" else value + fixed


def judged(runs: Sequence[LatencyResult]) -> tuple[list[tuple[LatencyResult, float, float]], float]:
    """Each run with a model: (run, measured p99 ms, predicted p99 ms plus the fixed path); and that path (ms)."""
    modelled = [r for r in runs if r.model is not None and r.ok]
    fixed = fixed_path_ms(modelled)
    compared = [
        (r, r.histogram.percentile(99) / 1000, predicted_ms(r.model, "p99_ms", fixed)) for r in modelled if r.model
    ]
    return compared, fixed


def model_figures(runs: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = by_label) -> dict[str, Any]:
    """What a saved file carries of the model besides each run's own (for other tools; {} when no run has one):
    the fixed path the Model table and `--table model` add to every prediction (a run's predicted percentile is
    its model's plus this, its deviation the model's alone), over the runs shown together, and the sentence.
    Without it the file's model read alone: 40.7 ms where the table showed 45.50."""
    compared, fixed = judged(runs)
    if not compared:
        return {}
    line = model_line(runs, name)
    return {"fixed_path_ms": fixed} | ({"model_verdict": line} if line is not None else {})


def _times(measured: float, predicted: float) -> str:
    return f"{measured / predicted:.2f}×" if predicted > 0 else "above"  # a saved model's p99 may be 0


def _path_is_most(runs: Sequence[LatencyResult], fixed: float) -> bool:
    """The fixed path is most of a run's median: too long for a path (loopback's is under a millisecond)."""
    return fixed > 0 and fixed > max(r.histogram.percentile(50) / 1000 for r in runs) / 2


def _fixed_clause(runs: Sequence[LatencyResult], fixed: float) -> str:
    if fixed <= 0:
        return ""
    # over kept connections each sample is a request, and the fastest one had no connection to set up
    unit = finished_unit(runs[0].load) if runs else "connection"
    path = "set-up, the kernel, the client" if unit == "connection" else "the kernel, the client"
    # A minimum that large is waiting (on a busy host: for a CPU other processes held, or behind workers slower
    # than the CPU time the model was given, their queue too), not a path: said so, not 'not the workers' queues'
    # (the tester's 87.8 ms at 89% of the CPUs used by others).
    # in a cgroup its CPU limit throttled (a container's cpu.max), that wait was the limit's (core/cgroup_cpu.py)
    limited = any(throttled_said(r.evidence.get("machine")) for r in runs)
    held = "a CPU the run's cgroup's CPU limit held back" if limited else "a CPU other processes held"
    most = (
        f"; that is most of each run's median latency, more than a path takes: whatever every {unit} waited for "
        f"that the model leaves out ({held}, workers slower than their CPU time, their queue too)"
        if _path_is_most(runs, fixed)
        else ""
    )
    return (
        f" (predictions include {fixed:.2f} ms that every {unit} took besides queueing, the fastest {unit}'s "
        f"time over the model's fastest: {path}{most})"
    )


def _too_small(runs: Sequence[LatencyResult], several: bool, name: Callable[[LatencyResult], str]) -> str:
    """The runs with too few measurements for their p99 to carry a verdict: judged neither way, and what would."""
    unit = finished_unit(runs[0].load)
    counted = [f"{name(r)} {r.histogram.count:,}" for r in runs] if several else [f"{runs[0].histogram.count:,}"]
    more = "-n" if all(r.load.connections is not None for r in runs) else "a --duration long enough for"
    return (
        f"too few {unit}s to judge ({', '.join(counted)} measured): a p99 needs {MIN_JUDGED} or more "
        f"({too_few([r.histogram.count for r in runs])}), so {more} {MIN_JUDGED} or more would tell"
    )


def in_flight(run: LatencyResult) -> int | None:
    """How many of a run's measurements one stall of the host can slow at once: a closed loop's clients, each with one
    connection (or request) in flight; None for an open loop, whose connections fall due whether or not the last
    was answered."""
    model = run.model
    return model.concurrency if model is not None and model.loop == "closed-loop" else None


def counted(run: LatencyResult, measured: float, predicted: float) -> bool:
    """Whether a run's p99 carries a verdict: MIN_JUDGED measurements or more, or fewer that read too far above the
    prediction for so few to explain (model_check.clearly_above)."""
    n = run.histogram.count
    return n >= MIN_JUDGED or clearly_above(n, measured, predicted, in_flight(run)) is not None


def _few_but_far(
    runs: Sequence[tuple[LatencyResult, float, float]], several: bool, name: Callable[[LatencyResult], str]
) -> str:
    """Of the runs judged above, those under MIN_JUDGED: how often so few read that far above the band's edge."""
    said = []
    for run, measured, predicted in runs:
        n = run.histogram.count
        together = in_flight(run)
        odds = clearly_above(n, measured, predicted, together)
        if n < MIN_JUDGED and odds is not None:
            who = f"{name(run)}: " if several else ""
            unit = finished_unit(run.load)
            at_once = (
                f", even where a stall slows all {together} clients' {unit}s at once"
                if together and together > 1
                else ""
            )
            said.append(
                f"{who}{n:,} {unit}s, under the {MIN_JUDGED} that judge a p99 either way, but from so few a p99 reads "
                f"{measured / (TOLERANCE * predicted):.1f}× the band's edge ({TOLERANCE:g}× the predicted) where that "
                f"is the true one in {percent(odds)} of runs{at_once}"
            )
    return f" ({'; '.join(said)})" if said else ""


def _one_stall(
    compared: Sequence[tuple[LatencyResult, float, float]], several: bool, name: Callable[[LatencyResult], str]
) -> str:
    """Of the runs too few to judge, those above the band whose p99 one stall could make (model_check.clearly_above's
    reason not to judge them): the odds before are of reading below the truth, which say nothing of a run read this
    far above it. 'latency --server nginx -w 2 --duration 50ms -c 4': 325 connections, 4.68x, the 4th slowest."""
    said = []
    for run, measured, predicted in compared:
        n, together = run.histogram.count, in_flight(run)
        slow = n - math.ceil(0.99 * n) + 1
        if not SLOWEST <= n < MIN_JUDGED or measured <= TOLERANCE * predicted:
            continue
        if together is None:
            why = "an open loop's fall due during it whether or not the last was answered"
        elif slow <= together:
            why = f"it slows all {together} clients' {finished_unit(run.load)}s in flight at once"
        else:
            continue
        who = f"{name(run)}'s " if several else "its "
        said.append(f"{who}p99, above the band, rests on its {slow} slowest, which one stall can make ({why})")
    return "; " + "; ".join(said) if said else ""


def model_line(runs: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = by_label) -> str | None:
    """One sentence: an open loop that was overloaded, then whether each run's measured p99 is within what
    queueing alone predicts for it (its own discipline, service time and load, plus the fixed path every
    connection takes), and what the run saw besides queueing where it is not. None when no run has a model."""
    compared, fixed = judged(runs)
    if not compared:
        return None
    modelled = [r for r, _, _ in compared]
    over = [o for r in modelled if (o := overload(r, name)) is not None]
    lead = "; ".join(over) + ". " if over else ""
    band = f"a factor of {TOLERANCE:g}"
    small = [r for r, m, p in compared if not counted(r, m, p)]
    enough = [(r, m, p) for r, m, p in compared if counted(r, m, p)]
    within = [r for r, m, p in enough if agrees(m, p)]
    below = [r for r, m, p in enough if not agrees(m, p) and m < p]
    beyond = [r for r, m, p in enough if not agrees(m, p) and m >= p]
    if len(compared) == 1:
        r, measured, predicted = compared[0]
        figures = f"measured p99 {measured:.2f} ms is {_times(measured, predicted)} the predicted {predicted:.2f} ms"
    else:
        figures = "p99 measured/predicted: " + ", ".join(
            f"{name(r)} {measured:.2f}/{predicted:.2f} ms ({_times(measured, predicted)})"
            for r, measured, predicted in compared
        )
    figures += _fixed_clause(modelled, fixed)
    several = len(compared) > 1
    clauses = [_too_small(small, several, name) + _one_stall(compared, several, name)] if small else []
    if within:
        who = ("each" if len(within) == len(compared) else ", ".join(name(r) for r in within)) if several else ""
        explains = (
            "so their queues account for the differences between them" if len(within) == len(compared) > 1 else ""
        )
        # where that time is most of the latency, only the tails above it are queueing's to explain
        alone = (
            "queueing predicts with that time added" if _path_is_most(modelled, fixed) else "queueing alone predicts"
        )
        clauses.append(f"{who} within {band} of what {alone}".strip() + (f", {explains}" if explains else ""))
    if below:
        # a herd, a lock or a slow client adds latency: none of them can explain a run faster than predicted
        who = ", ".join(name(r) for r in below) + " " if several else ""
        clauses.append(
            f"{who}below what queueing predicts by more than {band}: a herd, a lock or the client would lengthen "
            "latencies, so the "
            f"model's inputs (service time, discipline) do not fit {'that run' if several else 'this run'}{NOISE}"
        )
    if beyond:
        who = ", ".join(name(r) for r in beyond) + " " if several else ""
        few = _few_but_far([c for c in enough if any(c[0] is b for b in beyond)], several, name)
        clauses.append(
            f"{who}above what queueing predicts by more than {band}{few}: {something_else(beyond, name)}{NOISE}"
        )
    return lead + figures + ": " + "; ".join(clauses)


def queueing_explains(runs: Sequence[LatencyResult]) -> bool | None:
    """Whether every mode's measured p99 is within the model's tolerance of its own prediction (one round of
    a comparison); None when fewer than two runs have a model."""
    compared, _ = judged(runs)
    if len(compared) < 2 or not all(counted(r, m, p) for r, m, p in compared):
        return None  # a run too small to judge: the round says nothing either way
    return all(agrees(measured, predicted) for _, measured, predicted in compared)


def _waited(runs: Sequence[LatencyResult]) -> bool:
    """The round's 'fixed path' is most of a run's median: it agreed only with a wait the model leaves out added."""
    compared, fixed = judged(runs)
    return _path_is_most([r for r, _, _ in compared], fixed)


def model_agreement(rounds: Sequence[Sequence[LatencyResult]]) -> str | None:
    """Over repeated rounds: in how many queueing alone explained every mode's p99 (noise said). A round that
    agreed only with a 'fixed path' that is most of the median added is not queueing alone: counted apart."""
    said = [(e, _waited(r)) for r, e in ((r, queueing_explains(r)) for r in rounds) if e is not None]
    if not said:
        return None
    within = sum(1 for e, waited in said if e and not waited)
    added = sum(1 for e, waited in said if e and waited)
    line = (
        f"queueing alone explains every mode's p99 (within a factor of {TOLERANCE:g} of its prediction) in "
        f"{within}/{len(said)} runs"
    )
    if added:
        ones = "one" if added == 1 else "ones"
        line += f"; in {added} more only with a wait the model leaves out added "
        line += f"(their fastest {ones} took most of the median)"
    return line
