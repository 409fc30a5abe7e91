"""`latency --repeat N` (one mode or `--modes`) and `sweep --repeat N`: per variant the latency figures as
median and range over the runs, which variant had the lower tail in how many runs and how significantly,
and whether queueing alone explains the difference (experiments/latency/model_verdict.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ...analysis.losses import host_wide_losses, host_wide_note, sweep_name
from ...analysis.stability import Spread, latency_stability, names_of
from ...core.histogram import LatencyHistogram
from ...core.run_warnings import RunWarning, WarningKind, warn
from ...core.text import plural
from ...render.evidence import listener_drops_said
from ...render.spread_table import SpreadTable
from ...results import export
from .. import SWEEP_KIND
from ..generator_pace import CLOCKS, GENERATOR_PACED, every_run_paced, latency_paced_said
from ..repeat.kinds import Document, Repeated, Rounds, by_variant
from .kept_compare import kept_repeat_table
from .kept_report import requests_jain
from .model_verdict import model_agreement
from .pool_split import repeated_split_note
from .report import own_failures
from .result import LATENCY_SHAPE, LatencyResult
from .sweep_report import caps_not_applied
from .sweep_verdict import never_bound, split_unranked
from .work_share import repeated_work_note

COLUMNS = ("run", "count", "failed", "p50_us", "p99_us", "p999_us", "max_us", "wall_s")
# Kept connections (empty for one request per connection): the run's requests per connection, the connections
# its workers accepted, Jain's index over their requests, a pool's opened and planned size; per worker the
# connections it accepted and held at the end (the replies'), the most it held at once and the requests it
# answered (its own count: `served` beside it is the replies')
KEPT_COLUMNS = ("requests_per_connection", "connections", "jain_requests", "pool_opened", "pool_planned")
KEPT_WORKER_COLUMNS = ("accepted", "held_at_end", "held_peak", "worker_requests")


def _table(repeated: Repeated, rounds: Rounds) -> Table:
    of = repeated.of
    command = SWEEP_KIND if of == SWEEP_KIND else "latency"
    rate = next((r.load.rate for row in rounds for r in row if r.load.rate is not None), None)
    title = f"accept-order {command} --repeat" + (f", open loop at {rate:g}/s" if rate is not None else "")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    seed = of == SWEEP_KIND  # seed 001's columns: average latency (not p50), most accepts per wakeup
    names = ("mode", "avg ms" if seed else "p50 ms", "p99 ms", "p99.9 ms", "dev ms", "req/s",
             *(("max/wakeup",) if seed else ()), "errors")  # fmt: skip
    for name in names:
        table.add_column(name, justify="left" if name == "mode" else "right", overflow="fold")  # never cut a figure
    for label, runs in by_variant(repeated, rounds).items():
        ok = [r for r in runs if r.ok]
        if not ok:
            table.add_row(label, *["-"] * (len(names) - 2), str(_failed(runs)))
            continue

        def spread(values: list[float], scale: float = 1000.0, fmt: str = "{:.2f}") -> str:
            return Spread.of(values).text(scale, fmt)

        most = [float(max((c.max_batch or 0 for c in r.counters), default=0)) for r in ok]
        table.add_row(
            label,
            spread([r.histogram.mean_us if seed else r.histogram.percentile(50) for r in ok]),
            spread([r.histogram.percentile(99) for r in ok]),
            spread([r.histogram.percentile(99.9) for r in ok]),
            spread([r.histogram.stdev_us for r in ok]),
            spread([r.throughput for r in ok], 1.0, "{:.0f}"),
            *([spread(most, 1.0, "{:.0f}")] if seed else []),
            str(_failed(runs)),
        )
    return table


def _failed(runs: list[LatencyResult]) -> int:
    """The runs' failures, without the connections a stop (Ctrl-C in the last run) found under way, as each run's
    own report counts them (report.own_failures)."""
    return sum(sum(own_failures(r).values()) for r in runs)


def host_wide_text(rounds: Rounds) -> Text | None:
    """The loss counters that moved host-wide, said as such: they are no variant's loss (analysis/losses.py)."""
    runs = [r for row in rounds for r in row]
    moved = sum(bool(host_wide_losses(r.evidence)) for r in runs)
    note = host_wide_note([r.evidence for r in runs], f"{moved} of {len(runs)} runs")
    return None if note is None else Text(note[:1].upper() + note[1:], style="dim")


def listener_drops_lines(repeated: Repeated, rounds: Rounds) -> list[Text]:
    """Per variant whose server's own listeners dropped handshake packets in some run, the range of one run's count
    over the runs that read them, in one run's words (render/evidence.listener_drops_said): a host-wide count says
    nothing of whose. 'in each of its 2 runs', not 'over its 2 runs', which read 135 in each as 135 in all."""
    lines = []
    for label, runs in by_variant(repeated, rounds).items():
        counts = [n for r in runs if isinstance(n := r.evidence.get("listener_drops"), int)]
        if counts and max(counts) > 0:
            said, ran, read = listener_drops_said(min(counts), max(counts)), len(runs), len(counts)
            if read == ran:
                where = "in its one run" if ran == 1 else f"in each of its {ran} runs"
            else:
                where = f"in the one of its {ran} runs" if read == 1 else f"in each of the {read} of its {ran} runs"
                where += " that read them"
            lines.append(Text(f"{label}: {said} {where}", style="yellow"))
    return lines


def _report(repeated: Repeated, rounds: Rounds) -> list[RenderableType]:
    table = SpreadTable(_table(repeated, rounds))  # never a figure folded (render/spread_table.py)
    parts: list[RenderableType] = [table, Text("median (min-max) over the runs", style="dim")]
    kept = kept_repeat_table(by_variant(repeated, rounds))  # several requests per connection, or a pool
    parts.extend([kept, Text("Jain: over the requests each worker served; medians", style="dim")] if kept else [])
    host = host_wide_text(rounds)
    stability = None
    if len(rounds[0]) > 1:
        # a round whose every run the load generator paced ranks none, as one run's verdict (experiment.py) says
        ranked = [row for row in rounds if not every_run_paced(row)]
        if ranked:
            stability = latency_stability(ranked)
            unbound = _caps_unbound(repeated, ranked)
            parts.append(
                Text(
                    f"Verdict: {unbound}{stability.text}{_paced_apart(rounds, ranked)}",
                    style="green" if stability.conclusive and not unbound else "yellow",
                )
            )
        else:
            runs = "run in its one round" if len(rounds) == 1 else f"run in each of the {len(rounds)} rounds"
            what = "cap" if repeated.of == SWEEP_KIND else "mode"
            parts.append(Text(f"Verdict: no {what} ranked: {latency_paced_said(runs, CLOCKS)}", style="yellow"))
        if split := _split_note(repeated, rounds):  # the pool's split, beside the tails
            parts.append(Text(split))
        if work := repeated_work_note(by_variant(repeated, rounds)):  # unlike clocks part every round alike
            parts.append(Text(work[0].upper() + work[1:], style="yellow"))
        parts.extend(caps_not_applied(rounds[0][0]) if repeated.of == SWEEP_KIND else [])  # as one sweep's
        parts.extend([host] if host else [])
        parts.extend(listener_drops_lines(repeated, rounds))
        if stability is not None and stability.pairs:
            over = "the runs" if len(ranked) == len(rounds) else "the rounds the servers set the pace of"
            parts.append(
                Text(
                    f"Pair by pair over {over} (whole tail: p99, p99.9 and deviation all lower; "
                    "significance: a t-test of the p99s):"
                )
            )
            parts.extend(Text(f"  {line}", style="dim") for line in stability.pairs)
        agreement = model_agreement(rounds)
        if agreement is not None:
            parts.append(Text.assemble(("Model: ", "bold"), agreement))
    else:
        parts.extend([host] if host else [])
        parts.extend(listener_drops_lines(repeated, rounds))
    return parts


def _caps_unbound(repeated: Repeated, ranked: Rounds) -> str:
    """A sweep whose caps bound no wakeup in any round, or do not apply to its server: 'no cap to pick', as one
    sweep's verdict says (never_bound), before the tails' ranking, which is then not the cap's doing. The ranking
    stood alone: on tests/data/sweep_pool_caps_unbound.json twice, '1 limit has the lowest p99 in 2/2 runs,
    significantly lower than every other', where no wakeup of any run took more than 1 (the smallest cap) and the
    split note beside it named no cap."""
    if repeated.of != SWEEP_KIND:
        return ""
    if caps_not_applied(ranked[0][0]):
        return (
            "no cap to pick: --accept-batch does not apply to this server, so every cap ran the same server and what "
            "parts their tails is not the cap: "
        )
    unbound = [never_bound(row) for row in ranked]
    if any(u is None for u in unbound):
        return ""
    most = max(u.most for u in unbound if u is not None)
    rounds = "its one round" if len(ranked) == 1 else f"any of the {len(ranked)} rounds"
    return (
        f"no cap to pick: no wakeup of any run in {rounds} accepted more than {plural(most, 'connection')}, no more "
        "than the smallest cap allows, so what parts their tails is most likely not the cap: "
    )


def _split_note(repeated: Repeated, rounds: Rounds) -> str:
    """How each variant split a pool over the runs; a sweep's by cap, as one sweep's verdict says it (a round whose
    cap could not have parted the splits ranks none: sweep_verdict.split_unranked)."""
    variants = by_variant(repeated, rounds)
    if repeated.of != SWEEP_KIND:
        return repeated_split_note(variants)
    applies = not caps_not_applied(rounds[0][0])
    return repeated_split_note(variants, "cap", lambda runs: split_unranked(runs, applies))


def _paced_apart(rounds: Rounds, ranked: Rounds) -> str:
    """Where some rounds were the load generator's pace in every run: that the verdict counts the others only."""
    left = len(rounds) - len(ranked)
    if not left:
        return ""
    ranks = "it ranks" if left == 1 else "they rank"
    return (
        f"; over the {len(ranked)} of the {len(rounds)} rounds the servers set the pace of: in the other {left} "
        f"{GENERATOR_PACED} of every run, so {ranks} none"
    )


def latency_warnings(rounds: Rounds) -> list[RunWarning]:
    """Too few samples for the percentile shown; a load generator that waited for a CPU."""
    notes = []
    smallest = min((r.histogram.count for row in rounds for r in row), default=0)
    if smallest and smallest < 1000:
        notes.append(warn(WarningKind.FEW_SAMPLES, samples=smallest))
    waited = [
        (d.runqueue_s or 0) / d.wall_s for row in rounds for r in row for d in r.drivers if d.wall_s and d.runqueue_s
    ]
    if waited and max(waited) > 0.25:
        notes.append(warn(WarningKind.CLIENT_WAITED, percent=100 * max(waited)))
    return notes


def _rows(run: Document) -> list[list[Any]]:
    h = LatencyHistogram.from_dict(run["histogram"])
    tail = [h.percentile(q) if h.count else None for q in (50, 99, 99.9)]
    row = [export.label(run), h.count, sum(run.get("errors", {}).values()), *tail, h.max_us, run.get("wall_s")]
    return [row + _kept_cells(LatencyResult.from_dict(run))]


def _kept_cells(result: LatencyResult) -> list[Any]:
    if not result.connections:
        return [""] * len(KEPT_COLUMNS)
    opened, planned = result.pool if result.pool is not None else ("", "")
    jain = round(requests_jain(result), 4)
    return [result.load.requests_per_connection, sum(result.connections), jain, opened, planned]


def _worker_rows(run: Document) -> list[list[Any]]:
    rows = export.worker_rows([run])
    result = LatencyResult.from_dict(run)
    if not result.connections:
        return [row + [""] * len(KEPT_WORKER_COLUMNS) for row in rows]
    index = export.WORKER_FIELDS.index("index") + 1  # after the run's name

    def at(values: tuple[Any, ...], i: Any) -> Any:
        return values[i] if isinstance(i, int) and 0 <= i < len(values) else ""

    own = {c.index: c for c in result.counters}
    return [
        row
        + [
            at(result.connections, row[index]),
            at(result.held_at_end, row[index]),
            "" if (c := own.get(row[index])) is None or c.held_peak is None else c.held_peak,
            "" if c is None or c.requests is None else c.requests,
        ]
        for row in rows
    ]


def _p99_ms(run: LatencyResult) -> float:
    return run.histogram.percentile(99) / 1000 if run.ok else math.nan


def _by_cap(rows_of: Callable[[Document], list[list[Any]]]) -> Callable[[Document], list[list[Any]]]:
    """A sweep's rows named by their cap ('4 limit', as its report names them), not by the mode they share."""

    def rows(run: Document) -> list[list[Any]]:
        name = sweep_name(LatencyResult.from_dict(run))
        return [[name, *row[1:]] for row in rows_of(run)]

    return rows


def _repeated(of: str, command: str = "") -> Repeated:
    def report(rounds: Rounds) -> list[RenderableType]:
        return _report(repeated, rounds)

    repeated = Repeated(
        of=of,
        load=LatencyResult.from_dict,
        shape=LATENCY_SHAPE,
        names=names_of,
        report=report,
        columns=COLUMNS,
        rows=_by_cap(_rows) if of == SWEEP_KIND else _rows,
        worker_columns=("run", *export.WORKER_FIELDS, "served"),
        worker_rows=_by_cap(_worker_rows) if of == SWEEP_KIND else _worker_rows,
        value=_p99_ms,
        what="p99 (ms)",
        warnings=latency_warnings,
        command=command,
        kept_columns=KEPT_COLUMNS,
        kept_worker_columns=KEPT_WORKER_COLUMNS,
    )
    return repeated


LATENCY_REPEATED = _repeated("latency")
# a comparison of latencies is saved by `latency --modes`, and its picture's title says so
LATENCY_COMPARE_REPEATED = _repeated("latency-compare", "latency --modes")
SWEEP_REPEATED = _repeated(SWEEP_KIND)
