"""Where the CLI prints: stdout for reports, stderr for notes, progress bars and errors."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

PIPED_WIDTH = 120  # rich's 80 columns off a terminal would cut table cells; COLUMNS still wins


def stdout() -> Console:
    piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    # markup/emoji off: text that came from a result file must print as it is, never as rich markup.
    return Console(highlight=False, markup=False, emoji=False, width=PIPED_WIDTH if piped else None)


def stderr() -> Console:
    return Console(stderr=True, highlight=False, markup=False, emoji=False)


@contextmanager
def unless_hung_up() -> Iterator[None]:
    """Output that may meet a terminal that hung up (SIGHUP: every write to it now fails with EIO). From
    then on stdout and stderr go to /dev/null, so that what is left to do still happens: the result is
    saved, every process ended, and the exit status says how the run ended."""
    try:
        yield
    except OSError as exc:
        if exc.errno != errno.EIO:
            raise
        null = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            os.dup2(null, fd)
        os.close(null)


def note(text: str) -> None:
    """One line on stderr (after flushing stdout, so the report comes first on a shared terminal)."""
    with unless_hung_up():
        sys.stdout.flush()
        stderr().print(text, soft_wrap=True)


def print_report(renderable: Any) -> None:
    # crop=False: verbatim lines (mmhistogram output) are wider than 80 columns and must print whole.
    with unless_hung_up():
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
    bar = Progress(*columns, console=console, transient=True)
    with unless_hung_up():
        bar.start()
    try:
        task = bar.add_task(label, total=total, done=0)

        def update(done: int, elapsed: float = 0.0) -> None:
            bar.update(task, completed=done if by_count else min(elapsed, total or 0.0), done=done)

        yield update
    finally:
        with unless_hung_up():  # erasing the bar must not replace the run's own end (a hang-up's 129)
            bar.stop()
