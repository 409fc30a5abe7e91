"""`latency --modes`: the runs of several modes side by side, a histogram each, their latencies in one table of
fixed-width text, what each run's kept connections, load generator and model say, and the verdict."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from ...analysis.tails import TailVerdict, tail_verdict
from ...render.columns import TextColumn, TextTable
from ...render.evidence import moved_counters_lines
from ...render.hosts import HostsPart, host_parts
from ..launch_notes import launch_parts
from ..own_settings import caps_said
from .headlines import group_headline
from .kept_compare import kept_compare_parts
from .kept_load_words import finished_unit
from .load_notes import load_notes
from .model_report import model_report
from .report import (
    client_cpu_line,
    errors_block,
    interrupted_note,
    mmhistogram,
    ms_or_dash,
    open_loop_note,
    own_failures,
    under_way,
)
from .result import LatencyResult
from .syn_note import syn_stall_notes

WIDE = 1000  # as many columns as a line needs: the layout unstacked

COMPARE_COLUMNS = (
    ("min", "min_ms"),
    ("avg", "avg_ms"),
    ("med", "med_ms"),
    ("p90", "p90_ms"),
    ("p99", "p99_ms"),
    ("p99.9", "p99.9_ms"),
    ("max", "max_ms"),
    ("dev", "dev_ms"),
)


def compare_table(results: Sequence[LatencyResult]) -> TextTable:
    """The side-by-side table, as fixed-width text: stacked in parts when it is wider than the terminal."""
    width = max([len("mode"), *(len(r.server.label) for r in results)])
    summaries = [r.summary() for r in results]
    columns = [
        TextColumn(f"{name:>9}", tuple(f"{ms_or_dash(s.get(key)):>9}" for s in summaries))
        for name, key in COMPARE_COLUMNS
    ]
    columns.append(TextColumn(f"{'req/s':>9}", tuple(f"{r.throughput:>9.0f}" for r in results)))
    columns.append(TextColumn(f"{'errors':>8}", tuple(f"{sum(own_failures(r).values()):>8}" for r in results)))
    columns.append(TextColumn("  served per worker", tuple("  " + " ".join(map(str, r.served)) for r in results)))
    return TextTable(TextColumn(f"{'mode':<{width}}", tuple(f"{r.server.label:<{width}}" for r in results)), columns)


def compare_lines(results: Sequence[LatencyResult], width: int = WIDE) -> list[str]:
    return compare_table(results).lines(width)


def compare_report(
    results: Sequence[LatencyResult], skipped: dict[str, str], verdict: TailVerdict | None = None
) -> RenderableType:
    verdict = verdict or tail_verdict(results)
    parts: list[RenderableType] = [*interrupted_note(results)]
    if results:
        caps = caps_said([r.server for r in results])  # where the modes read one
        parts.append(group_headline("accept-order latency --modes", results[0], "", caps))
    for r in results:
        parts.append(mmhistogram(r))
        errors = errors_block(own_failures(r), r.driven, finished_unit(r.load), under_way(r))
        if errors:
            parts.append(errors)
    parts.append(Text("latency by mode (ms)", style="bold"))
    parts.append(compare_table(results))
    parts.extend(syn_stall_notes(results, named=True))
    parts.extend(moved_counters_lines((r.server.label, r.evidence) for r in results))  # one run's line, per run
    parts.extend(kept_compare_parts(results))
    parts.extend(client_cpu_line(results))
    parts.extend(
        host_parts([HostsPart(r.server.label, r.hosts, r.wall_s, r.load.rate, r.interrupted) for r in results], "mode")
    )
    parts.extend(note for r in results if (note := open_loop_note(r, named=True)) is not None)
    parts.extend(model_report(results))
    for mode, reason in skipped.items():
        parts.append(Text(f"{mode}: not available: {reason}", style="dim"))
    parts.extend(load_notes(results))
    parts.extend(launch_parts(r.server for r in results))
    parts.append(Text.assemble(("Verdict: ", "bold"), verdict.text))
    return Group(*parts)
