"""The per-worker table every report shows: what each worker served, and what it and the kernel counted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from rich.text import Text

from ..core.cpus import format_cpu_list
from ..core.measures import WorkerCounters
from .simple_table import SimpleTable


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.1f}%" if total else "-"


def _opt(value: int | float | None, fmt: str = "{}") -> str:
    return "-" if value is None else fmt.format(value)


# What each column that needs it means; a legend names only the columns its table shows.
_MEANINGS = (
    ("wakeups", "times the wait call returned"),
    ("empty", "woken but got EAGAIN"),
    ("max", "most accepts in one wakeup"),
    ("sleeps", "voluntary context switches (times the worker blocked)"),
    ("preempt", "involuntary ones"),
)


def worker_legend(detail: bool = False, sleeps: str | None = None) -> str:
    """The legend of a worker_table with the same `detail`; `sleeps`: whose switches they are (ServerKind.sleeps:
    a Puma worker's server thread's, an attached worker's every thread's), said where it is known."""
    meanings = dict(_MEANINGS)
    if sleeps:
        meanings["sleeps"] = f"voluntary context switches of {sleeps} (times it blocked)"
    return "; ".join(f"{name}: {meaning}" for name, meaning in meanings.items() if detail or name != "preempt")


def worker_table(
    counters: Sequence[WorkerCounters],
    served: Sequence[int] | None,
    title: str | None = None,
    detail: bool = False,
    ids: str = "pid",
    of: int | None = None,
) -> SimpleTable:
    """One row per worker. `detail` adds involuntary switches and CPU affinity (for herd and latency).
    `served` None (or too short for a worker): not known, shown as `-` rather than a count of 0. `ids`: what the
    workers' ids are, "tid" where they are threads of one process (HAProxy's: `ps -p` finds no process 4323).
    `of`: what the shares are of, where the rows do not hold all that was served (a --target's replies that named
    no worker: 48 of the 100 named read '48.0%' where 200 were served); the rows' sum otherwise."""
    total = sum(served or ()) if of is None else of
    columns = ["worker", ids, "served", "share", "wakeups", "accepted", "empty", "max", "sleeps", "cpu ms"]
    if detail:
        columns += ["preempt", "cpus"]
    table = SimpleTable([(name, "left" if name == "cpus" else "right") for name in columns], title=title)
    for c in counters:
        count = served[c.index] if served is not None and c.index < len(served) else None
        row = [
            str(c.index),
            str(c.pid),
            _opt(count),
            "-" if count is None else _share(count, total),
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


def own_count_text(
    own: Sequence[int], parts: Sequence[tuple[Sequence[int], Mapping[str, int]]], over: str, lead: str = ""
) -> Text:
    """The requests each worker says it answered over a run's `parts` (burst's cells, ramp's steps: each its
    replies per worker and the client's errors), beside the replies' count summed over them; `over` names
    the parts ("the bursts"), `lead` starts the line. Green where they agree, else why they differ."""
    replies = [sum(served[i] for served, _ in parts if i < len(served)) for i in range(len(own))]
    said = " ".join(map(str, own))
    head = f"{lead}requests per worker over {over}, the workers' own count: {said}"
    if list(own) == replies:
        return Text(f"{head}, as the replies say", style="green")
    errors: Counter[str] = Counter()
    for _, part_errors in parts:
        errors.update(part_errors)
    from ..analysis.kept_counts import own_count  # kept connections only: not at start-up (issue 30)

    counted = own_count(own, replies, errors)
    return Text(
        f"{head}; the replies say {' '.join(map(str, replies))} ({counted.why()})",
        style="" if counted.explained else "yellow",
    )
