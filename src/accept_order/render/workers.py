"""The per-worker table every report shows: what each worker served, and what it and the kernel counted."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.table import Table

from ..cpus import format_cpu_list
from ..measures import WorkerCounters


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.1f}%" if total else "-"


def _opt(value: int | float | None, fmt: str = "{}") -> str:
    return "-" if value is None else fmt.format(value)


def worker_table(
    counters: Sequence[WorkerCounters], served: Sequence[int], title: str | None = None, detail: bool = False
) -> Table:
    """One row per worker. `detail` adds involuntary switches and CPU affinity (for herd and latency)."""
    total = sum(served)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    columns = ["worker", "pid", "served", "share", "wakeups", "accepted", "empty", "max", "sleeps", "cpu ms"]
    if detail:
        columns += ["preempt", "cpus"]
    for name in columns:
        table.add_column(name, justify="left" if name == "cpus" else "right")
    for c in counters:
        count = served[c.index] if c.index < len(served) else 0
        row = [
            str(c.index),
            str(c.pid),
            str(count),
            _share(count, total),
            _opt(c.wakeups),
            _opt(c.accepts),
            _opt(c.empty),
            _opt(c.max_batch),
            _opt(c.voluntary_switches),
            _opt(None if c.cpu_s is None else c.cpu_s * 1000, "{:.1f}"),
        ]
        if detail:
            row += [_opt(c.involuntary_switches), format_cpu_list(c.affinity) or "-"]
        table.add_row(*row)
    return table
