"""What every command does the same way: print the report, then write the JSON, then say where."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click

from .output import note, print_report


def host_warnings() -> None:
    """Warnings the option types collected (e.g. a listen address others can reach), one line each."""
    ctx = click.get_current_context(silent=True)
    for warning in ctx.meta.get("accept_order.warnings", []) if ctx else []:
        note(f"accept-order: warning: {warning}")


def report_and_save(renderable: Any, json_path: str | None, kind: str, payload: dict[str, Any]) -> None:
    """The report first, so a write that fails (disk full) loses nothing on screen; then the file."""
    print_report(renderable)
    if json_path:
        from ..results.envelope import save

        save(json_path, kind, payload)
        note(f"wrote {json_path}")


@contextmanager
def keep_partial(on_partial: Callable[[Sequence[Any]], None]) -> Iterator[None]:
    """Ctrl-C / SIGTERM during a run that keeps partial results: report and save what was measured,
    marked interrupted, then let the signal end the command (exit 130 / 143). The same when a worker of
    a server this tool did not start exits mid-run: then its one line ends the command (exit 1)."""
    from ..errors import WorkerExited
    from ..session import RunInterrupted
    from ..signals import deferred

    try:
        yield
    except RunInterrupted as stop:
        if stop.results:
            with deferred():  # a second Ctrl-C must not cut the saving of the first one's result short
                on_partial(stop.results)
        raise stop.cause from None
    except WorkerExited as exited:
        if exited.results:
            with deferred():
                on_partial(exited.results)
        raise
