"""What a progress bar shows besides its label: the bar, or, once it is full or stalled, what the command is
still waiting for; and its columns, laid out on one line whatever the width (cli/output.py progress_bar)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

STALL_S = 0.5  # five load ticks: a bar whose figures have not moved for this long is waiting: it says for what


def duration_text(seconds: float) -> str:
    """`42 s`, `3 min`, `1 h 5 min`: as precise as a rough estimate deserves."""
    if seconds < 90:
        return f"{max(seconds, 0):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds // 3600:.0f} h {seconds % 3600 / 60:.0f} min"


class BarState:
    """What a bar says after its figures: nothing while the load goes on; once it is full (every connection
    done, or the load's time up) or its count has stopped moving, what the command is still waiting for, so
    that a full bar never sits there saying nothing while the work goes on. `update` is the load's tick
    (connections done, seconds of load); `ticks`: it comes every TICK_S while the load runs (drive_load's),
    so ticks that stop mean the load has finished; `text` is read as the bar is redrawn."""

    def __init__(
        self,
        total: float | None,
        by_count: bool = True,
        timeout_s: float | None = None,
        ticks: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.by_count, self.timeout_s, self.ticks, self.clock = total, by_count, timeout_s, ticks, clock
        self.done, self.elapsed = 0, 0.0
        self.ticked = self.moved = clock()

    def update(self, done: int, elapsed: float = 0.0) -> None:
        now = self.clock()
        if done != self.done:
            self.moved = now
        self.done, self.elapsed, self.ticked = done, elapsed, now

    def text(self) -> str:
        if self.total is None:
            return ""
        now = self.clock()
        timeout = f" (timeout {duration_text(self.timeout_s)})" if self.timeout_s else ""
        if (self.by_count and self.done >= self.total) or (self.ticks and now - self.ticked >= STALL_S):
            return "load done, stopping"
        if not self.by_count and self.elapsed + (now - self.ticked) >= self.total:
            return f"time up, finishing those in flight{timeout}"
        if self.ticks and self.by_count and self.done and now - self.moved >= STALL_S:
            return f"waiting for the last {self.total - self.done:g}{timeout}"
        return ""


def _column(ratio: int | None = None) -> Any:
    """A column rich may narrow when the line is too long (its text cut with "…", never wrapped onto a second
    line); `ratio`: it takes the room the others leave (the bar)."""
    from rich.table import Column

    return Column(no_wrap=False, overflow="ellipsis", ratio=ratio)


def figures(*columns: Any) -> list[Any]:
    """Progress columns that are never narrowed (the counts, the time elapsed)."""
    from rich.table import Column

    for column in columns:
        column._table_column = Column(no_wrap=True)
    return list(columns)


def said_by(say: Callable[[], str]) -> Any:
    """A progress bar column whose text is `say()` at each redraw (rich is imported only for a bar)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class _Said(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(say(), no_wrap=True, overflow="ellipsis")

    return _Said(table_column=_column())


def bar_or_state(state: BarState) -> Any:
    """The bar while the load goes on; in its place, once it is full or stalled, what is still going on."""
    from rich.progress import BarColumn
    from rich.text import Text

    class _BarOrState(BarColumn):
        def render(self, task: Any) -> Any:
            said = state.text()
            return Text(said, style="yellow", no_wrap=True, overflow="ellipsis") if said else super().render(task)

    return _BarOrState(bar_width=None, table_column=_column(ratio=1))
