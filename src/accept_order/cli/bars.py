"""What a progress bar shows besides its label: the bar, or, once it is full or stalled, what the command is
still waiting for; and its columns, laid out on one line where they fit, else on more (fitted_progress, bar_layouts;
cli/output.py progress_bar)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

STALL_S = 0.5  # five load ticks: a bar whose figures have not moved for this long is waiting: it says for what
BAR_ROOM = 10  # the fewest cells a bar is drawn in when a layout is judged to fit
# A column in a layout, with the most cells it is counted at when judging the fit (None: its whole text; 0: it wraps
# onto further lines)
Placed = tuple[Any, int | None]


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


def said_by(say: Callable[[], str], wrap: bool = False) -> Any:
    """A progress bar column whose text is `say()` at each redraw (rich is imported only for a bar); `wrap`: onto
    further lines where it is longer than the line, as on a line of its own; else cut with "…"."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class _Said(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(say(), no_wrap=not wrap, overflow="ellipsis")

    return _Said(table_column=_column())


def bar_or_state(state: BarState, wrap: bool = False) -> Any:
    """The bar while the load goes on; in its place, once it is full or stalled, what is still going on (`wrap`:
    onto further lines where it is longer than the line, as on a line of its own; else cut with "…")."""
    from rich.progress import BarColumn
    from rich.text import Text

    class _BarOrState(BarColumn):
        def render(self, task: Any) -> Any:
            said = state.text()
            return Text(said, style="yellow", no_wrap=not wrap, overflow="ellipsis") if said else super().render(task)

    return _BarOrState(bar_width=None, table_column=_column(ratio=1))


def fitted_progress(layouts: Sequence[Sequence[Sequence[Placed]]], console: Any, **options: Any) -> Any:
    """A rich Progress drawn in the first of `layouts` whose every line fits the console's width (the last one
    drawn whatever: its narrowable columns cut); each layout a list of lines, each line its columns. On one line at
    40 columns, the figures ('20000/20000', '20,000 served, 0 failed', the time) were cut with "…" like the label;
    rich narrows the bar to what is left, and the figures now go to a line of their own, or say less, to fit too.
    The layout is chosen at each redraw, from what the columns say then (the console's width may change)."""
    from rich.progress import Progress
    from rich.table import Table
    from rich.text import Text

    def width(column: Any, most: int | None, tasks: Sequence[Any]) -> int:
        """The cells a column's text takes (a bar, not text, BAR_ROOM: rich narrows it to what is left)."""
        cells = 0
        for task in tasks:
            drawn = column(task)
            cells = max(cells, drawn.cell_len if isinstance(drawn, Text) else BAR_ROOM)
        return cells if most is None else min(cells, most)

    class _Fitted(Progress):
        def make_tasks_table(self, tasks: Any) -> Table:
            chosen = layouts[-1]
            for layout in layouts:  # `console`, not self.console: Progress reads that off its Live, made after a draw
                needed = (sum(width(c, most, tasks) for c, most in line) + len(line) - 1 for line in layout)
                if all(cells <= console.width for cells in needed):
                    chosen = layout
                    break
            lines = []
            every, expand = self.columns, self.expand
            try:
                for line in chosen:
                    self.columns = tuple(column for column, _ in line)
                    # a line of figures alone is as wide as they are: spread over the width, they drifted apart
                    self.expand = expand and any(column.get_table_column().ratio for column, _ in line)
                    lines.append(super().make_tasks_table(tasks))
            finally:
                self.columns, self.expand = every, expand
            if len(lines) == 1:
                return lines[0]
            stacked = Table.grid(expand=expand)
            stacked.add_column()
            for drawn in lines:
                stacked.add_row(drawn)
            return stacked

    every = {id(column): column for layout in layouts for line in layout for column, _ in line}
    return _Fitted(*every.values(), console=console, **options)


def bar_layouts(say: Callable[[], str], state: BarState, count: Any) -> list[list[list[Placed]]]:
    """A progress bar's layouts for fitted_progress, in order: one line where it fits; else the figures on a line
    of their own, then in fewer words; else the label, the bar (or what it waits for) and the figures each on a
    line, the first two wrapped where longer than it, the figures split at last (drawn anyway). On one line a long
    label is counted whole: cut to keep one line, the label of latency --modes's second run at 80 columns read 'run
    2 of 2, about 4 s left: re…' beside a bar of one cell, the mode gone. The task's fields: `outcome`, how the
    finished ones ended; `short`, the failures alone (core/finished.py)."""
    from rich.progress import TextColumn, TimeElapsedColumn

    outcome = TextColumn("{task.fields[outcome]}")  # how the finished ones ended: a count alone looked well
    short = TextColumn("{task.fields[short]}")  # the failures alone, where a narrow terminal has no room for it
    said, drawn = said_by(say), bar_or_state(state)
    count, outcome, short, elapsed = figures(count, outcome, short, TimeElapsedColumn())
    whole: list[Placed] = [(count, None), (outcome, None), (elapsed, None)]
    fewer: list[Placed] = [(count, None), (short, None), (elapsed, None)]
    apart: list[list[Placed]] = [[(said_by(say, wrap=True), 0)], [(bar_or_state(state, wrap=True), 0)]]
    return [
        [[(said, None), (drawn, None), *whole]],
        [[(said, None), (drawn, None)], whole],
        [[(said, None), (drawn, None)], fewer],
        [*apart, whole],
        [*apart, fewer],
        [*apart, [(count, None), (elapsed, None)], [(short, None)]],
    ]
