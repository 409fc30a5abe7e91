"""The herd table: per mode, how many workers one connection woke, with the kernel's evidence."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...analysis.herd import HerdRow, acceptor_of
from ...render.evidence import PRIVATE_SHORT, SHARED_SHORT, acceptor_text, short_counter
from ...render.stopped import stopped_early
from ...render.text import duration_us, plural
from ...render.workers import worker_table
from ..launch_notes import launch_parts
from ..sleeps_legend import ids_of
from .result import HerdResult

HERD_LEGEND = (
    "wakeups: wait calls that returned; acc: accepts; empty: woken but got EAGAIN; acc/wakeup: accepts per "
    "wakeup, mean / max; sleeps: voluntary context switches, all workers; "
    "woken: sleeps per served connection, where a worker blocks only to wait for one (else -): the workers one "
    "connection woke (the kernel puts most herd "
    "wakers back to sleep before they return, so sleeps count more than empty returns); "
    "cpu µs/conn: all workers' CPU per served connection, *: plus the acceptor process's (its sleeps are "
    "not in woken; see its evidence line); p50/p99 ms: connect to end of reply"
)


def _fmt(value: float | int | None, spec: str = "{}") -> str:
    return "-" if value is None else spec.format(value)


def _ms(us: int | None) -> str:
    return "-" if us is None else f"{us / 1000:.2f}"


def _cpu_text(row: HerdRow) -> str:
    if row.cpu_us_per_connection is None:
        return "-"
    return f"{row.cpu_us_per_connection:.0f}" + ("*" if row.acceptor_cpu_s is not None else "")


def herd_table(result: HerdResult) -> Table:
    table = Table(
        title="accept-order herd",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    right = ("wakeups", "acc", "empty", "acc/wakeup", "sleeps", "woken", "cpu µs/conn", "p50 ms", "p99 ms")
    for name in ("mode", *right, "verdict"):
        table.add_column(name, justify="right" if name in right else "left", no_wrap=name != "verdict")
    for row in result.rows:
        expected = row.as_expected
        style = "green" if expected else ("yellow" if expected is False else "")
        verdict = Text(row.verdict(), style=style)
        if expected is False:
            verdict.append(f" (expected {row.expected_woken})")
        table.add_row(
            row.mode,
            _fmt(row.wakeups),
            _fmt(row.accepts),
            _fmt(row.empty),
            "-" if row.accepts_per_wakeup is None else f"{row.accepts_per_wakeup:.2f} / {row.max_batch}",
            _fmt(row.voluntary),
            _fmt(row.woken_per_connection, "{:.2f}"),
            _cpu_text(row),
            _ms(row.latency_p50_us),
            _ms(row.latency_p99_us),
            verdict,
        )
    for mode, reason in result.skipped.items():
        table.add_row(mode, *["-"] * len(right), Text(f"not available: {reason}", style="dim"))
    return table


def _evidence_lines(result: HerdResult) -> list[RenderableType]:
    lines: list[RenderableType] = []
    shared: bool | None = None
    for run in result.runs:
        ev = run.evidence
        if not ev:
            continue
        shared = bool(shared) or ev.get("shared_namespace", True)
        start = ev.get("listeners", {}).get("start", [])
        moved = ", ".join(f"{short_counter(n)} {v:+d}" for n, v in ev.get("counters", {}).items())
        queues = f"{len(start)} listener{'s' if len(start) != 1 else ''}"
        lines.append(Text(f"  {run.server.mode}: {queues}; counters: {moved or 'none moved'}"))
        acceptor = acceptor_of(ev)
        if acceptor is not None:
            lines.append(Text("  ") + acceptor_text(acceptor))
    if lines:
        lines.insert(0, Text("Kernel evidence (drop/overflow counters, per run)", style="bold"))
        lines.append(Text(f"  ({SHARED_SHORT if shared else PRIVATE_SHORT})", style="dim"))
    return lines


def herd_report(result: HerdResult, per_worker: bool = False) -> RenderableType:
    parts: list[RenderableType] = [herd_table(result), Text(HERD_LEGEND, style="dim")]
    if result.runs:
        env = result.runs[0].environment
        served = sum(r.served for r in result.runs)
        driven = sum(len(r.records) for r in result.runs)
        unsettled = sum(r.unsettled for r in result.runs)
        parts.append(
            Text(
                f"{plural(result.workers, 'worker')}, {plural(result.connections, 'sequential connection')} "
                "per mode, work "
                f"{duration_us(result.work_us)}, backlog {result.backlog}; served {served} of {driven}; "
                f"{env.system} {env.kernel}, {env.cpu_count} CPUs",
                style="dim",
            )
        )
        if unsettled:
            parts.append(
                Text(
                    f"Warning: {unsettled} connections started before every idle worker was asleep "
                    "(busy machine): fewer workers may have been there to wake.",
                    style="yellow",
                )
            )
    parts += launch_parts(r.server for r in result.runs)
    if result.interrupted:
        parts.append(stopped_early([r.server.mode for r in result.runs if r.interrupted]))
    parts.extend(_evidence_lines(result))
    if per_worker:
        for run in result.runs:
            parts.append(
                worker_table(run.counters, run.counts, title=f"{run.server.mode}", detail=True, ids=ids_of(run.server))
            )
    return Group(*parts)
