"""Where the CLI prints: stdout for reports, stderr for notes, progress bars and errors."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from ..render.text import CONTROLS, escape_controls

PIPED_WIDTH = 120  # rich's 80 columns off a terminal would cut table cells; COLUMNS still wins


class _Console(Console):
    """A console whose text can never carry a control character to the terminal: whatever a report
    holds (a --title, a file name, a string from a result file that was not escaped before), every
    control character in what it renders is printed as an escape (`\\x1b`). Line breaks stay; rich's
    own control segments (cursor moves of a progress bar) are not text and pass. Markup and emoji are
    off: a "[bold]" in a file name or a title prints as it is."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(highlight=False, markup=False, emoji=False, **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not CONTROLS.search(segment.text):
                yield segment
            else:
                text = "\n".join(escape_controls(line) for line in segment.text.split("\n"))
                yield Segment(text, segment.style)


def stdout() -> Console:
    piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return _Console(width=PIPED_WIDTH if piped else None)


def stderr() -> Console:
    return _Console(stderr=True)


def note(text: str) -> None:
    """One line on stderr (after flushing stdout, so the report comes first on a shared terminal); a line
    break in it (from a file name) is escaped too, so it stays one line."""
    sys.stdout.flush()
    stderr().print(escape_controls(text), soft_wrap=True)


def print_report(renderable: Any) -> None:
    # crop=False: verbatim lines (mmhistogram output) are wider than 80 columns and must print whole.
    stdout().print(renderable, crop=False)
    sys.stdout.flush()


@contextmanager
def progress_bar(
    label: str, total: float | None, by_count: bool = True, threshold: float = 0
) -> Iterator[Callable[..., None]]:
    """A transient progress bar on stderr for long runs on a terminal; a no-op callback otherwise.

    The callback takes (done, elapsed_s): completed connections, and seconds for a duration run."""
    console = stderr()
    if not console.is_terminal or (total is not None and total < threshold):
        yield lambda *_: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn(label), BarColumn()]
    columns.append(MofNCompleteColumn() if by_count else TextColumn("{task.fields[done]} connections"))
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=total, done=0)

        def update(done: int, elapsed: float = 0.0) -> None:
            bar.update(task, completed=done if by_count else min(elapsed, total or 0.0), done=done)

        yield update
