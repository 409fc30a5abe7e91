"""The thundering-herd comparison: every mode, same workers and connections, how many workers one
connection wakes.

Seed 004 counted wasted accepts with strace. Here each worker counts its own wait returns and empty
(EAGAIN) returns, and the kernel's per-process context-switch counters (psutil deltas over the run)
count the wakeups that never reach user space: without EPOLLEXCLUSIVE, poll and select, every idle
worker is woken, the kernel rechecks readiness and puts most of them straight back to sleep. Each of
those sleeps is one voluntary context switch, so voluntary switches per served connection is the
number of workers one connection woke.

Connections are driven one after the other and, before each, the supervisor waits until every idle
worker is asleep in its wait call (Plan.settle), so every connection meets all workers idle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from . import api
from .errors import PlanError
from .evidence import PRIVATE_SHORT, SHARED_SHORT, short_counter
from .modes import MODES, get_mode, split_available
from .records import ConnectionRecord, Plan, RunResult
from .report import register_renderer, worker_table

__all__ = [
    "HERD_MODES",
    "DEFAULT_WORKERS",
    "DEFAULT_CONNECTIONS",
    "HERD_THRESHOLD",
    "HerdRow",
    "HerdResult",
    "herd_row",
    "herd_plans",
    "run_herd",
    "herd_table",
    "herd_report",
]

HERD_MODES: tuple[str, ...] = tuple(MODES)  # every mode, poll and select included
DEFAULT_WORKERS = 4
DEFAULT_CONNECTIONS = 20
#: Woken per connection at or above this counts as a herd. One wakeup per connection is the floor
#: (the winner sleeps again after answering); a herd of W idle workers gives about W.
HERD_THRESHOLD = 1.5


@dataclass(frozen=True)
class HerdRow:
    """One mode's line of the herd table, summed over its workers."""

    mode: str
    workers: int
    served: int
    failed: int
    wakeups: int  # wait calls that returned to user space
    accepts: int
    empty: int  # returns that found nothing (EAGAIN): woken, but another worker took it
    max_batch: int
    voluntary: int | None  # kernel wakeups: every sleep after a wakeup is one voluntary switch
    involuntary: int | None
    cpu_s: float | None
    cpu_s_per_worker: tuple[float | None, ...]
    woken_per_connection: float | None
    wakes_all: bool  # the mode's mechanism predicts a herd

    @property
    def accepts_per_wakeup(self) -> float:
        return self.accepts / self.wakeups if self.wakeups else 0.0

    @property
    def herd(self) -> bool | None:
        """True if one connection woke more than one worker; None when it could not be measured."""
        if self.woken_per_connection is None:
            return None
        return self.woken_per_connection >= HERD_THRESHOLD

    @property
    def expected_woken(self) -> int:
        return self.workers if self.wakes_all else 1

    @property
    def as_expected(self) -> bool | None:
        herd = self.herd
        if herd is None or self.workers < 2:
            return None
        return herd == self.wakes_all

    def verdict(self) -> str:
        w = self.woken_per_connection
        if w is None:
            return "not measured (no context-switch counts or nothing served)"
        if self.herd:
            return f"herd: wakes ~{round(w)} of {self.workers}"
        return "no herd: wakes 1"


def _sum_opt(values: Iterable[int | float | None]) -> Any:
    items = list(values)
    return None if any(v is None for v in items) else sum(v for v in items if v is not None)


def herd_row(result: RunResult) -> HerdRow:
    counters = result.counters
    cpu = _sum_opt(c.cpu_s for c in counters)
    return HerdRow(
        mode=result.plan.mode,
        workers=result.plan.workers,
        served=result.served,
        failed=result.failed,
        wakeups=sum(c.returns for c in counters),
        accepts=sum(c.accepts for c in counters),
        empty=sum(c.empty for c in counters),
        max_batch=max((c.max_batch for c in counters), default=0),
        voluntary=_sum_opt(c.voluntary_switches for c in counters),
        involuntary=_sum_opt(c.involuntary_switches for c in counters),
        cpu_s=None if cpu is None else round(cpu, 6),
        cpu_s_per_worker=tuple(c.cpu_s for c in counters),
        woken_per_connection=result.verdict.woken_per_connection,
        wakes_all=get_mode(result.plan.mode).wakes_all,
    )


@dataclass(frozen=True)
class HerdResult:
    """Every mode's run with the same settings, and the modes this machine could not run."""

    workers: int
    connections: int
    work_us: int
    backlog: int
    runs: tuple[RunResult, ...]
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def rows(self) -> list[HerdRow]:
        return [herd_row(r) for r in self.runs]

    def row(self, mode: str) -> HerdRow:
        for r in self.runs:
            if r.plan.mode == mode:
                return herd_row(r)
        raise KeyError(mode)

    def to_dict(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "connections": self.connections,
            "work_us": self.work_us,
            "backlog": self.backlog,
            "runs": [r.to_dict() for r in self.runs],
            "skipped": dict(self.skipped),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HerdResult:
        return cls(
            workers=data["workers"],
            connections=data["connections"],
            work_us=data.get("work_us", 0),
            backlog=data.get("backlog", Plan.backlog),
            runs=tuple(RunResult.from_dict(r) for r in data["runs"]),
            skipped=dict(data.get("skipped", {})),
        )


def herd_plans(modes: Sequence[str] = HERD_MODES, **options: Any) -> tuple[list[Plan], dict[str, str]]:
    """Validated plans for the modes this machine supports, and why the others are skipped.

    Every plan is built before anything runs, so a bad option fails at once (PlanError)."""
    if not modes:
        raise PlanError("no modes given")
    available, skipped = split_available(modes)
    return [api.make_plan(mode=name, **options) for name in available], skipped


def run_herd(
    modes: Sequence[str] = HERD_MODES,
    workers: int = DEFAULT_WORKERS,
    connections: int = DEFAULT_CONNECTIONS,
    on_record: Callable[[ConnectionRecord], None] | None = None,
    **options: Any,
) -> HerdResult:
    """Run each mode with the same workers, connections and options (api.make_plan's); settle is on,
    so every connection meets all workers idle and asleep."""
    options["settle"] = True
    options.setdefault("gap_ms", 0.0)  # one connection at a time: the herd is one connection's
    plans, skipped = herd_plans(modes, workers=workers, connections=connections, **options)
    runs = tuple(api.run_plan(plan, on_record=on_record) for plan in plans)
    first = plans[0] if plans else api.make_plan(workers=workers, connections=connections, **options)
    return HerdResult(first.workers, first.connections, first.work_us, first.backlog, runs, skipped)


# ------------------------------------------------------------------------------------------------
# Pure renderers
# ------------------------------------------------------------------------------------------------

HERD_LEGEND = (
    "woke: wait calls that returned; acc: accepts; empty: returned but got EAGAIN; acc/woke: accepts per "
    "return, mean / max; cpu ms: CPU per worker, mean / max; "
    "sleeps/preempt: voluntary/involuntary context switches, all workers; "
    "woken: sleeps per served connection = workers one connection woke (the kernel puts most herd "
    "wakers back to sleep before they return, so sleeps count more than empty returns)"
)


def _fmt(value: float | int | None, spec: str = "{}") -> str:
    return "-" if value is None else spec.format(value)


def herd_table(result: HerdResult) -> Table:
    table = Table(
        title="accept-order herd",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    right = ("woke", "acc", "empty", "acc/woke", "sleeps", "preempt", "cpu ms", "woken")
    for name in ("mode", *right, "verdict"):
        table.add_column(
            name, justify="right" if name in right else "left", no_wrap=name != "verdict"
        )
    for row in result.rows:
        cpu = [c for c in row.cpu_s_per_worker if c is not None]
        cpu_text = "-" if not cpu else f"{1000 * sum(cpu) / len(cpu):.1f}/{1000 * max(cpu):.1f}"
        expected = row.as_expected
        style = "green" if expected else ("yellow" if expected is False else "")
        verdict = Text(row.verdict(), style=style)
        if expected is False:
            verdict.append(f" (expected {row.expected_woken})")
        table.add_row(
            row.mode,
            str(row.wakeups),
            str(row.accepts),
            str(row.empty),
            f"{row.accepts_per_wakeup:.2f} / {row.max_batch}",
            _fmt(row.voluntary),
            _fmt(row.involuntary),
            cpu_text,
            _fmt(row.woken_per_connection, "{:.2f}"),
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
        lines.append(Text(f"  {run.plan.mode}: {queues}; counters: {moved or 'none moved'}"))
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
                f"{result.workers} workers, {result.connections} sequential connections per mode, work "
                f"{result.work_us / 1000:g} ms, backlog {result.backlog}; served {served} of {driven}; "
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
    parts.extend(_evidence_lines(result))
    if per_worker:
        for run in result.runs:
            parts.append(worker_table(run.counters, run.counts, title=f"{run.plan.mode}", detail=True))
    return Group(*parts)


register_renderer("herd", lambda doc: herd_report(HerdResult.from_dict(doc)))
