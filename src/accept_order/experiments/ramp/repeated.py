"""`ramp --repeat N`: per mode, the knee (the last step that held before the first that did not) as
median and range over the runs, and whether the runs put it at the same step; with several modes, which
held a higher load than the others (its first step that did not hold came later, or never) in how many runs."""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ...analysis.stability import Stability, agreement
from ...render.text import plural
from ..generator_pace import GENERATOR_PACED, paced_said
from ..own_settings import backlog_said, caps_said
from ..repeat.kinds import Document, Repeated, Rounds, by_variant, each
from .machine_share import machine_caveat, machine_rounds
from .report import coordinated, overflows, ramp_table, served_less, work_and_step
from .result import RAMP_SHAPE, RampResult
from .step_verdict import CLIENT_PACED

LEGEND = (
    "knee: the last step that held before the first that did not; broke at: that first step; median "
    "(min-max) over the runs that had one (both middle ones where they differ)"
)


LEGEND_ONE = "knee: the last step that held before the first that did not; broke at: that first step"


def _name(run: RampResult) -> str:
    return run.server.label


def offered_text(kind: str, offered: float) -> str:
    return f"{offered:g}/s" if kind == "rate" else f"{offered:g} in flight"


def _kind(run: RampResult) -> str:
    return run.steps[0].kind if run.steps else ("rate" if run.plan.get("rates") else "concurrency")


def knee(run: RampResult) -> float | None:
    """The last offered load that held before the first that did not (None: no step held)."""
    held = run.knee[0]
    return None if held is None else held.offered


def broke_at(run: RampResult) -> float | None:
    """The first offered load that did not hold (None: every step held, or Ctrl-C cut the run short first)."""
    broke = run.knee[1]
    return None if broke is None else broke.offered


def knee_outcome(run: RampResult) -> str:
    """What one run says of the knee, in words the runs can agree on."""
    held, broke = run.knee
    if held is None:
        return "interrupted before a step held" if run.cut_short else "no step held"
    where = offered_text(_kind(run), held.offered)
    if broke is None:
        return f"held to {where}, then interrupted" if run.cut_short else f"every step held (to {where})"
    return f"last held {where}"


def paced(row: Sequence[RampResult]) -> bool:
    """Every mode of this round (two at least) broke at a step where the load generator was CPU-bound while the
    workers idled (the step's own note: run.CLIENT_PACED): where they broke is the generator's as much as theirs."""
    runs = [r for r in row if r.steps]
    broke = [r.knee[1] for r in runs]
    return len(runs) > 1 and all(b is not None and any(CLIENT_PACED in s for s in b.seen) for b in broke)


def held_higher(row: Sequence[RampResult]) -> str | None:
    """The mode of this round whose first step that did not hold came later than every other's (one that
    held every step counts as later than any that broke); None when two tie, when a run cut short leaves
    it unknown, or when the load generator set the pace of every mode's breaking step (paced)."""
    runs = [r for r in row if r.steps]
    if any(r.cut_short for r in runs) or paced(row):
        return None
    reach = sorted(((b if (b := broke_at(r)) is not None else math.inf), _name(r)) for r in runs)
    if len(reach) < 2 or reach[-1][0] == reach[-2][0]:
        return None
    return reach[-1][1]


PACED_HOW = "CPU-bound while the workers idled: the steps' notes"


def higher_stability(rounds: Rounds) -> Stability:
    """In how many runs one mode held a higher load than the others, and in how many the load generator set
    the pace of every mode's breaking step (those rank none, and say why, as burst --repeat's do)."""
    n, left = len(rounds), sum(paced(row) for row in rounds)
    if left == n:
        runs = "its one run" if n == 1 else f"each of the {n} runs"
        said = paced_said(f"mode's breaking step in {runs}", PACED_HOW, "the loads they broke at")
        return Stability(f"no mode ranked: {said}", False, 0, n, None)
    outcomes = [held_higher(row) for row in rounds]
    claim, none = "held a higher load than the others", "no mode held a higher load than all the others"
    if not left:
        return agreement(outcomes, claim, none)
    stability = agreement(outcomes, claim, none, advice="")  # the advice after why some rounds rank none
    said = f"; in {left} of the {n} runs {GENERATOR_PACED} of every mode's breaking step, so they rank none"
    advice = "; try more --repeat" if stability.agree and not stability.conclusive else ""
    return dataclasses.replace(stability, text=stability.text + said + advice)


_FIGURE = re.compile(r"(?<![\w.])\d+(\.\d+)?")  # p99 and p99.9 keep their names


def pattern(said: str) -> str:
    """A reason or an observation without its figures, so the runs can be counted together ("p99 184.6 ms >
    20 ms" and "p99 328.4 ms > 20 ms" are one reason: "p99 N ms > 20 ms")."""
    head, bound = said.split(" > ", 1) if " > " in said else (said, None)
    # one figure's noun in the singular: 'up to 1 connection waited' and 'up to 20 connections waited' are one
    head = _AFTER_A_FIGURE.sub(r"N \1", _FIGURE.sub("N", head))
    return f"{head} > {bound}" if bound is not None else head


_AFTER_A_FIGURE = re.compile(r"\bN (\w+?)s\b")


def _figures(said: str) -> list[float]:
    head = said.split(" > ", 1)[0]
    return [float(m.group()) for m in _FIGURE.finditer(head)]


def _number(value: float) -> str:
    """A figure as the reasons spell it, without an exponent (2000000, not 2e+06) or a trailing .0 (30, not 30.0)."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def with_ranges(saids: list[str]) -> str:
    """Words of one pattern said in several runs, each figure the range the runs' figures spanned ("p99
    184.6-328.4 ms > 20 ms"; one value where they agree): the reader sees the figures, not a placeholder. Each
    range goes where its figure stood in the first run's words, not at an N (ECONNREFUSED and SYN have theirs)."""
    columns = list(zip(*(_figures(x) for x in saids), strict=True))
    spans = iter(_number(min(v)) if min(v) == max(v) else f"{_number(min(v))}-{_number(max(v))}" for v in columns)
    # the words of a run whose figures are not all 1: a range's noun in the plural ('1-20 connections')
    words = next((x for x in saids if any(f != 1 for f in _figures(x))), saids[0])
    head, bound = words.split(" > ", 1) if " > " in words else (words, None)
    head = _FIGURE.sub(lambda _: next(spans), head)
    return f"{head} > {bound}" if bound is not None else head


def broke_lines(label: str, runs: list[RampResult]) -> list[Text]:
    """Why the first step that did not hold did not, and what was seen there, counted over the runs, each with
    the range its figures spanned."""
    broke = [step for r in runs if (step := r.knee[1]) is not None]
    if not broke:
        return []
    n = len(runs)
    lines = []
    for what, said in (("did not hold", [s.reasons for s in broke]), ("there", [s.seen for s in broke])):
        by_pattern: dict[str, list[str]] = {}
        for items in said:
            first: dict[str, str] = {}  # a pattern counted once a step, with its first figures
            for x in items:
                first.setdefault(pattern(x), x)
            for shape, x in first.items():
                by_pattern.setdefault(shape, []).append(x)
        ranked = sorted(by_pattern.items(), key=lambda item: -len(item[1]))  # stable: first seen first on ties
        if ranked:
            # one run (ramp --modes alone): its own words, not 'in 1/1'
            parts = [with_ranges(xs) + (f" in {len(xs)}/{n}" if n > 1 else "") for _, xs in ranked]
            lines.append(Text(f"  {label}, {what}: " + "; ".join(parts)))
    return lines


def _steps_spread(known: list[float], kind: str, n: int) -> str:
    """Median (range) of the steps the runs ran, a step offered (not '1500/s' of 1000/s and 2000/s); of an even count
    whose middle two differ both ('1000/s (1000-2000)' was the slower of two runs), of two each. `n` runs in all."""
    low, high, spread = statistics.median_low(known), statistics.median_high(known), f"{min(known):g}-{max(known):g}"
    if low == high:
        said = offered_text(kind, low) + (f" ({spread})" if len(known) > 1 else "")  # one run: '300/s', not (300-300)
    elif len(known) == 2:
        said = f"{offered_text(kind, low)} and {offered_text(kind, high)}"  # each run's: no middle to name
    else:
        said = f"{offered_text(kind, low)} and {offered_text(kind, high)} in the middle ({spread})"
    return said + (f" in {len(known)}/{n}" if len(known) < n else "")  # fewer had one: in how many ('300/s in 1/2')


def _spread(values: list[float | None], kind: str, missing: str) -> str:
    """Median (range) of the runs that had one, and in how many runs there was none."""
    known = [v for v in values if v is not None]
    gone = len(values) - len(known)
    if not known:
        return f"{missing} in {gone}/{len(values)}"
    return _steps_spread(known, kind, len(values)) + (f"; {missing} in {gone}/{len(values)}" if gone else "")


def _knee_spread(runs: list[RampResult], kind: str) -> str:
    """The knee of the runs that had one (a step held, then one did not), and in how many there was none: no
    step held, every step held, or Ctrl-C came first (a last step that held is no knee then)."""
    known = [k for r in runs if broke_at(r) is not None and (k := knee(r)) is not None]
    n = len(runs)
    none_held = sum(broke_at(r) is not None and knee(r) is None for r in runs)
    cut = sum(broke_at(r) is None and r.cut_short for r in runs)
    all_held = n - len(known) - none_held - cut
    parts = [_steps_spread(known, kind, n)] if known else []
    for count, what in ((none_held, "no step held"), (all_held, "every step held"), (cut, "interrupted")):
        parts += [f"{what} in {count}/{n}"] if count else []
    return "; ".join(parts)


def _broke_spread(runs: list[RampResult], kind: str) -> str:
    """Where the runs broke (as _spread says it), and in how many a step cut short left it unknown."""
    cut = sum(r.cut_short for r in runs)
    if not cut:
        return _spread([broke_at(r) for r in runs], kind, "every step held")
    known = [b for r in runs if (b := broke_at(r)) is not None]
    held = len(runs) - cut - len(known)
    parts = [_steps_spread(known, kind, len(runs))] if known else []
    parts += [f"every step held in {held}/{len(runs)}"] if held else []
    return "; ".join([*parts, f"interrupted in {cut}/{len(runs)}"])


def report(rounds: Rounds) -> list[RenderableType]:
    """--repeat's: each mode's knee over the runs, however many finished (one, when a stop cut the rest)."""
    return _report(rounds, single=False)


def report_once(rounds: Rounds) -> list[RenderableType]:
    """ramp --modes without --repeat: one round, whose steps are the result ('ramp --modes epoll,reuseport'
    showed a knee per mode and no step: no got/s, no p99, no failures), each mode's table above the comparison."""
    return _report(rounds[:1], single=True)


def _report(rounds: Rounds, single: bool) -> list[RenderableType]:
    variants = by_variant(RAMP_REPEATED, rounds)
    steps: list[RenderableType] = []
    for run in rounds[0] if single else ():
        steps += [Text(run.server.label, style="bold"), ramp_table(run, title=None)]
    title = "accept-order ramp --modes" if single else "accept-order ramp --repeat"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("mode", "knee", "broke at", *(() if single else ("the knee over the runs",))):
        table.add_column(name, justify="left" if name in ("mode", "the knee over the runs") else "right")
    for label, runs in variants.items():
        if single:  # one run's knee as it is: no median, range or 'in 1/1'
            table.add_row(label, *_one_knee(runs[0]))
            continue
        kind = _kind(runs[0])
        stability = agreement([knee_outcome(r) for r in runs], "", "no knee")
        table.add_row(
            label,
            _knee_spread(runs, kind),
            _broke_spread(runs, kind),
            Text(stability.text, style="green" if stability.conclusive else "yellow"),
        )
    parts: list[RenderableType] = [*steps, table, Text(LEGEND_ONE if single else LEGEND, style="dim")]
    for label, runs in variants.items():
        parts += broke_lines(label, runs) + fell_lines(label, runs)
    first = rounds[0][0]
    plan = first.plan
    loop = "open loop" if plan.get("rates") else "closed loop"
    work, step = work_and_step(first.server.work_us, plan.get("step_s"))
    parts.append(
        Text(
            f"{plural(first.server.workers, 'worker')}, work {work}{backlog_said(first.server)}"
            f"{caps_said([r.server for r in rounds[0]])}; {loop}, "
            f"{step} per step",
            style="dim",
        )
    )
    if len(variants) > 1:
        parts.append(_one_verdict(rounds[0]) if single else _verdict(rounds))
    return parts


def fell_lines(label: str, runs: list[RampResult]) -> list[Text]:
    """Where every step held but the last served under half of what an earlier one did (report.served_less):
    the first such run's words, and in how many runs. A run that broke has its knee said (broke_lines), not this:
    served_less reads the steps' rates alone, and a mode whose 8000/s failed 154 read 'every step held, but ...'."""
    fell = [said for r in runs if broke_at(r) is None and (said := served_less(r)) is not None]
    if not fell:
        return []
    many = f" (in {len(fell)}/{len(runs)} runs)" if len(runs) > 1 else ""
    return [Text(f"  {label}: every step held, {fell[0]}{many}", style="yellow")]


def _further(rounds: Rounds) -> str:
    """Where every step held: the breaking points further out, or, where a last step served under half of an
    earlier one, not said to be (more load was served less there: fell_lines)."""
    plan = rounds[0][0].plan
    higher = "higher --rates" if plan.get("rates") else "higher --concurrency-steps"
    if any(served_less(r) is not None for row in rounds for r in row):
        return "but a last step served under half what an earlier one did (above)"
    return f"the breaking points are further out ({higher})"


def _verdict(rounds: Rounds) -> Text:
    stability = higher_stability(rounds)
    text = f"Verdict: {stability.text}"
    machine = ""  # where the modes that broke first did so on a machine others held: not green
    if stability.winner is not None:
        machine = machine_rounds([row for row in rounds if held_higher(row) == stability.winner], stability.winner)
    text += machine
    if all(broke_at(r) is None and not r.cut_short for row in rounds for r in row):
        text += f": every step held in every run, {_further(rounds)}"
    return Text(text, style="green" if stability.conclusive and not machine else "yellow")


def _one_verdict(row: Sequence[RampResult]) -> Text:
    """One run of each mode (ramp --modes without --repeat): what it showed, and that one run is all it is."""
    higher = held_higher(row)
    if any(r.cut_short for r in row if r.steps):  # held_higher cannot tell then
        return Text("Verdict: none: interrupted before every mode's breaking point was known", style="yellow")
    if all(broke_at(r) is None and not r.cut_short for r in row):
        said = "no mode held a higher load than all the others: every step held in each, "
        return Text(f"Verdict: {said}{_further([list(row)])}", style="yellow")
    if paced(row):  # as burst --repeat says a burst the load generator paced
        said = paced_said("mode's breaking step", PACED_HOW, "the loads they broke at")
        return Text(f"Verdict: no mode ranked in this one run: {said}", style="yellow")
    said = f"{higher} held a higher load than the others" if higher else "no mode held a higher load than the others"
    if higher:  # a mode that broke first where other processes held most of the machine
        said += " in this one run" + machine_caveat([r for r in row if r.steps and _name(r) != higher])
        return Text(f"Verdict: {said} (--repeat N tells how often)", style="yellow")
    return Text(f"Verdict: {said} in this one run (--repeat N tells how often)", style="yellow")


def _one_knee(run: RampResult) -> tuple[str, str]:
    """One run's knee and the step it broke at, each said as it is (the knee's cell says why there is none)."""
    held, broke = run.knee
    kind = _kind(run)
    if held is not None and broke is not None:
        return offered_text(kind, held.offered), offered_text(kind, broke.offered)
    return knee_outcome(run), "-" if broke is None else offered_text(kind, broke.offered)


def _rows(doc: Document) -> list[list[Any]]:
    """A step's figures as its run's table gives them, the overflows and longest accept queue too (what says why a
    step broke; blank where not read), which one ramp's steps table has and --modes' rows lacked."""
    run = RampResult.from_dict(doc)
    elsewhere = coordinated(run)
    rows = []
    for s in run.steps:
        dropped = overflows(s, elsewhere)
        queue = [max(s.queues)] if s.queues else [""]  # blank where no queue was read, as the table's '-'
        figures = [s.failed, s.p50_us, s.p99_us, s.p999_us, "" if dropped is None else dropped, *queue]
        rows.append([_name(run), s.kind, s.offered, round(s.throughput, 1), *figures, s.held])
    return rows


def _worker_rows(doc: Document) -> list[list[Any]]:
    run = RampResult.from_dict(doc)
    rows = []
    for s in run.steps:
        for i, served in enumerate(s.served):
            rows.append([_name(run), s.offered, i, served, s.worker_cpu[i] if i < len(s.worker_cpu) else ""])
    return rows


def _rounds_figure(rounds: Rounds, options: Any) -> Any:
    from .plot import ramp_rounds_figure  # matplotlib's, only when drawn

    return ramp_rounds_figure(rounds, options)


def _knee_value(run: RampResult) -> float:
    value = knee(run)
    return math.nan if value is None else value


RAMP_REPEATED = Repeated(
    of="ramp",
    load=RampResult.from_dict,
    shape=RAMP_SHAPE,
    names=each(_name),
    report=report,
    report_once=report_once,
    reads_cut_runs=True,  # its report says a run cut short as one ('held to 600/s, then interrupted')
    # kind: rate or concurrency, as the steps table names it ('loop' held it, a name other tables give io_uring)
    columns=(
        "run",
        "kind",
        "offered",
        "got_per_s",
        "failed",
        "p50_us",
        "p99_us",
        "p999_us",
        "overflows",
        "max_recv_q",
        "held",
    ),
    rows=_rows,
    worker_columns=("run", "offered", "worker", "served", "cpu"),
    worker_rows=_worker_rows,
    value=_knee_value,
    figure=lambda rounds, options: _rounds_figure(rounds, options),
    what="the last step that held (offered load)",  # a run that held every step has no knee: its last step
)
