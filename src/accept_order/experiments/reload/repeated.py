"""`reload --repeat N`: per mode (and way of going, and tcp_migrate_req) what was served, lost and reset as
median and range over the runs, how often it lost nothing and kept the kernel's promise, and whether the
verdict (which of them lost nothing) was the same in k of n runs.

A run lost nothing only when its worker did go (in time) and no connection failed: a run whose load ended
before the worker went had nothing to lose."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ...analysis.stability import Spread, Stability, agreement
from ...render.text import durations_us, plural
from ...results.export import WORKER_FIELDS
from ..own_settings import caps_said
from ..repeat.kinds import Document, Repeated, Rounds, by_variant, each
from .report import earliest_going, stalled_after_kill, unserved_queue, went_text
from .result import RELOAD_RUN, ReloadRun

RESET = "ECONNRESET"
LEGEND = (
    "leave: the worker closes its listener, serves what it holds and exits; kill: SIGKILL; migrate: "
    "net.ipv4.tcp_migrate_req in the run's private namespace; kernel's promise: the runs whose loss was within "
    "what the kernel promises for the mode (- : it promises nothing there)"
)


def _name(run: ReloadRun) -> str:
    migrate = f" migrate={run.migrate}" if run.queue == "per-worker" else ""
    return f"{run.server.label} {run.how}{migrate}"


def lost_nothing(run: ReloadRun) -> bool:
    return run.at_s is not None and run.gone_s is not None and not run.interrupted and run.failed == 0


def _outcome(run: ReloadRun) -> str:
    """What a run showed, in words the rounds can agree on: a run that did not lose nothing need not have lost
    anything (its worker had not gone in time, or never was told: 'lost connections' said so of 0 lost)."""
    if lost_nothing(run):
        return "lost nothing"
    if run.failed:
        return "lost connections"
    if run.interrupted:
        return "was stopped first"
    if run.at_s is None:
        return "had its load end before the worker went"
    return "had its worker still there after the wait"


def who_lost_nothing(row: Sequence[ReloadRun]) -> str:
    """One round's verdict in words the rounds can agree on: which runs lost nothing."""
    kept = [_name(r) for r in row if lost_nothing(r)]
    if len(kept) == len(row):
        return "every one lost nothing" if len(row) > 1 else f"{kept[0]} lost nothing"
    if len(row) == 1:
        return f"{_name(row[0])} {_outcome(row[0])}"
    if not kept:
        outcomes = list(dict.fromkeys(_outcome(r) for r in row))
        return f"every one {outcomes[0]}" if len(outcomes) == 1 else f"none lost nothing ({', '.join(outcomes)})"
    return f"only {', '.join(kept)} lost nothing"


def verdict_stability(rounds: Rounds) -> Stability:
    return agreement([who_lost_nothing(row) for row in rounds], "", "no verdict")


def _spread(values: list[int]) -> str:
    return Spread.of(values).text(fmt="{:.0f}")


def _promise(runs: list[ReloadRun]) -> Text:
    """Of the runs whose worker went, those within the kernel's promise among those it promises something of; runs
    whose only excess is timeouts in a served queue (ReloadRun.waited_past_timeout) are said apart, not left out
    unsaid: 'kept in 2/2' read of 4 epoll kills whose other 2 timed out 21 and 1 in a served queue (load 9)."""
    gone = [r for r in runs if r.gone_s is not None]
    judged = [r.as_expected for r in gone if r.as_expected is not None]
    served = sum(r.waited_past_timeout for r in gone)
    apart = f"{served} of {len(runs)} timed out in a served queue" if served else ""
    if not judged:
        return Text(apart or "-")
    kept = sum(judged)
    said = f"kept in {kept}/{len(judged)}" + (f"; {apart}" if apart else "")
    return Text(said, style="green" if kept == len(judged) else "yellow")


def report(rounds: Rounds) -> list[RenderableType]:
    variants = by_variant(RELOAD_REPEATED, rounds)
    table = Table(title="accept-order reload --repeat", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    right = ("served", "lost", "reset", "lost nothing")
    for name in ("run", *right, "kernel's promise"):
        table.add_column(name, justify="right" if name in right else "left", no_wrap=name == "run")
    for label, runs in variants.items():
        table.add_row(
            label,
            _spread([sum(r.served) for r in runs]),
            _spread([r.failed for r in runs]),
            _spread([r.errors.get(RESET, 0) for r in runs]),
            f"{sum(lost_nothing(r) for r in runs)}/{len(runs)}",
            _promise(runs),
        )
    first: ReloadRun = rounds[0][0]
    load = first.load
    runs = [r for row in rounds for r in row]  # when it went, as the one run's line says it
    # one unit on the line: when the worker went, how long the load ran, the work per connection
    at, ran, work = durations_us(earliest_going(runs), (load.duration_s or 0) * 1e6, first.server.work_us)
    went = went_text(runs, any(r.interrupted for r in runs), at)
    parts: list[RenderableType] = [
        table,
        Text("median (min-max) over the runs; lost: connections that failed; reset: by ECONNRESET", style="dim"),
        Text(LEGEND, style="dim"),
        Text(
            f"{plural(first.server.workers, 'worker')}, worker {first.worker} {went}; "
            f"closed-loop load of {load.concurrency} for {ran} per run, work {work}"
            f"{caps_said([r.server for r in runs])}",
            style="dim",
        ),
    ]
    stability = verdict_stability(rounds)
    parts.append(Text(f"Verdict: {stability.text}", style="green" if stability.conclusive else "yellow"))
    return parts + [Text(said, style="yellow") for label, runs in variants.items() if (said := _unserved(label, runs))]


def _unserved(label: str, runs: list[ReloadRun]) -> str | None:
    """The runs whose kill left connections queued until they timed out, as the one run's report says it (and why,
    where it can tell), said of the first of them: the table's medians and 'kept in k/n' leave which runs and why
    unsaid."""
    said = [(i, text) for i, run in enumerate(runs, 1) if (text := stalled_after_kill(run) or unserved_queue(run))]
    if not said:
        return None
    which = ", ".join(str(i) for i, _ in said)
    return (
        f"{label}: a kill left connections in the shared queue until they timed out in {len(said)} of "
        f"{plural(len(runs), 'run')} ({'round' if len(said) == 1 else 'rounds'} {which}); round {said[0][0]}, the "
        f"first: {said[0][1]}"
    )


def _rows(doc: Document) -> list[list[Any]]:
    r = ReloadRun.from_dict(doc)
    return [[_name(r), r.how, r.migrate, r.driven, sum(r.served), r.failed, r.errors.get(RESET, 0), r.held, r.at_s,
             r.gone_s]]  # fmt: skip


def _worker_rows(doc: Document) -> list[list[Any]]:
    r = ReloadRun.from_dict(doc)
    rows = []
    for c in r.worker_counters:
        counted = asdict(c)
        served = r.served[c.index] if 0 <= c.index < len(r.served) else ""
        rows.append([_name(r), *(counted.get(f) for f in WORKER_FIELDS), served])
    return rows


RELOAD_REPEATED = Repeated(
    of="reload",
    load=ReloadRun.from_dict,
    shape=RELOAD_RUN,
    names=each(_name),
    report=report,
    columns=("run", "how", "migrate", "driven", "served", "lost", "reset", "held", "at_s", "gone_s"),
    rows=_rows,
    worker_columns=("run", *WORKER_FIELDS, "served"),
    worker_rows=_worker_rows,
    value=lambda run: float(run.failed),
    what="connections lost",
)
