"""The burst table (seed 004's): rows of client counts, a column per server and mode, the time until every
client was served; then what failed, how the work spread, and what the kernel counted."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...render.evidence import short_counter, shortage_lines
from ...render.text import duration_us, plural
from .result import BurstCell, BurstResult, BurstRun


def _cell(cell: BurstCell | None) -> Text:
    if cell is None:
        return Text("-")
    text = Text(f"{cell.wall_s:.2f} s")
    if cell.failed:
        text.append(f" ({cell.failed} failed)", style="yellow")
    if cell.client_bound:
        text.append(" *", style="yellow")
    if cell.interrupted:
        text.append(" (interrupted)", style="yellow")
    return text


def burst_table(result: BurstResult) -> Table:
    table = Table(title="accept-order burst", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("clients", justify="right")
    for run in result.runs:
        table.add_column(run.server.label, justify="right")
    counts = sorted({c.clients for r in result.runs for c in r.cells})
    for n in counts:
        table.add_row(str(n), *[_cell(next((c for c in r.cells if c.clients == n), None)) for r in result.runs])
    return table


def _details(run: BurstRun) -> list[Text]:
    lines = []
    for cell in run.cells:
        spread = " ".join(map(str, cell.served))
        parts = [f"  {run.server.label}, {cell.clients}: served {sum(cell.served)} ({spread})"]
        if cell.errors:
            parts.append("failed " + ", ".join(f"{k} {v}" for k, v in sorted(cell.errors.items())))
        if cell.counters:
            parts.append(", ".join(f"{short_counter(k)} {v:+d}" for k, v in cell.counters.items()))
        if cell.max_us is not None:
            parts.append(f"slowest {cell.max_us / 1000:.1f} ms")
        if cell.open_s is not None:
            parts.append(f"connects started within {cell.open_s * 1000:.0f} ms")
        if cell.client_cpu_us is not None:
            parts.append(f"load generator {cell.client_cpu_us:.0f} CPU-µs per connection")
        lines.append(Text("; ".join(parts)))
    return lines + shortage_lines(list(run.shortages))


def burst_report(result: BurstResult) -> RenderableType:
    parts: list[RenderableType] = [burst_table(result)]
    legend = (
        "time from the first connect to the last reply; * the load generator took more than half of it to start "
        "the connections, so it set the pace"
    )
    parts.append(Text(legend, style="dim"))
    if result.runs:
        first = result.runs[0]
        env = first.environment
        where = f"; {env.system} {env.kernel}, {plural(env.cpu_count, 'CPU')}" if env else ""
        parts.append(
            Text(
                f"{plural(first.server.workers, 'worker')}, work {duration_us(first.server.work_us)}, backlog "
                f"{first.server.backlog}{where}"
            )
        )
        parts.append(Text("Per burst: served per worker, failures, kernel counters", style="bold"))
        for run in result.runs:
            parts += _details(run)
    for name, reason in result.skipped.items():
        parts.append(Text(f"  {name}: not available: {reason}", style="dim"))
    if any(c.counters.get("TcpExtSyncookiesSent") and c.errors.get("timeout") for r in result.runs for c in r.cells):
        parts.append(
            Text(
                "Timeouts with SyncookiesSent: the SYN queue overflowed and the kernel answered with cookies; a "
                "client whose final ACK then found the accept queue full was dropped without a trace, and a "
                "client that waits for the server to speak first (this one) never sends anything that would "
                "retry it. A server-speaks-first protocol meets this on any overloaded listener.",
                style="yellow",
            )
        )
    for note in result.notes:
        parts.append(Text(note, style="dim"))
    return Group(*parts)
