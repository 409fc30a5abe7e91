"""What every command does the same way: write the JSON, then print the report, then say where."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click

from .output import RESULT_TO_STDOUT, note, print_report


def host_warnings() -> None:
    """Warnings the option types collected (e.g. a listen address others can reach), one line each."""
    ctx = click.get_current_context(silent=True)
    for warning in ctx.meta.get("accept_order.warnings", []) if ctx else []:
        note(f"accept-order: warning: {warning}")


def report_and_save(report: Callable[[], Any], json_path: str | None, kind: str, result: Any) -> None:
    """The file first, so that nothing after it (building the report, printing it to a reader that went
    away or a full disk) can lose the result; then the report, printed even when the file could not be
    written (that error follows it). From the end of the run until the file is written, signals are held
    (core/signals.py keep, holding): a Ctrl-C can neither lose the result nor cut the file short. A first
    signal that came meanwhile ends the command after the file and the report, with its own status; a
    second one (or one while an interrupted run is kept) means stop now: the file is kept, the report
    left out. `--json -`: the JSON on stdout in place of the report, whole or an error (one line, exit 1)
    naming the file it was kept in instead: cli/result_stdout.py."""
    from ..core.errors import OutputError, ResultFileError
    from ..core.signals import holding, received, release

    unsaved: ResultFileError | None = None
    to_stdout = json_path == RESULT_TO_STDOUT
    with holding() as hold:
        release()  # the hold the run kept since its end: this one goes on until the file is whole
        if json_path:
            from ..experiments.documents import save, saved_text

            try:
                if to_stdout:
                    from .result_stdout import write_result

                    write_result(saved_text(kind, result, "stdout"), kind)
                else:
                    save(json_path, kind, result)
            except ResultFileError as exc:
                unsaved = exc
    cause = hold.taken()
    again = received() > 1  # a second signal means stop now: the file is kept, the report left out
    if again and not to_stdout:  # a --json file that could not be written keeps nothing: kept elsewhere, as without
        _said_left_out(json_path if unsaved is None else None, kind, result)
    if not again and not to_stdout:
        try:
            print_report(report())
        except OutputError as exc:
            if unsaved is not None:
                raise unsaved from None
            if json_path and not exc.broken_pipe:
                raise OutputError(f"{exc} (the result is saved in {json_path})") from None
            raise
    if unsaved is not None:
        raise unsaved
    if json_path and not to_stdout:
        note(f"wrote {json_path}")
    if cause is not None:
        raise cause


def _said_left_out(json_path: str | None, kind: str, result: Any) -> None:
    """Stop now, yet lose no measurement and leave no one wondering where the report went: without a --json file
    written (none given, or its write failed: its error follows) the result is kept in a new file of the working
    directory (as --json -'s reader gone keeps it), which the line names; with it, the line says `show` prints the
    report. 'latency --duration 20s', Ctrl-C twice at 4 s: exit 130 with 'wrote ...' and the interrupted line, or
    with the interrupted line alone and four seconds of measurement lost."""
    if json_path:
        note(f"accept-order: interrupted again: the report is left out; 'accept-order show {json_path}' prints it")
        return
    from ..experiments.documents import saved_text
    from .result_stdout import kept_instead

    kept = kept_instead(saved_text(kind, result, "a file"), f"accept-order-{kind}")
    note(f"accept-order: interrupted again: the report is left out; {kept} ('accept-order show' prints it)")


@contextmanager
def keep_partial(
    on_partial: Callable[[Sequence[Any]], None], on_stopped: Callable[[Sequence[Any], str], None] | None = None
) -> Iterator[None]:
    """Ctrl-C / SIGTERM during a run that keeps partial results: report and save what was measured,
    marked interrupted, then let the signal end the command (exit 130 / 143). The same when a worker of
    a server this tool did not start exits mid-run: then its one line ends the command (exit 1). An error
    after some of a run's loads (RunStopped): `on_stopped(results, why)` reports and saves them, marked
    stopped with why, then the error's one line ends the command (exit 1); without `on_stopped` (a command
    whose file cannot say so) the error alone, as before."""
    from ..core.errors import WorkerExited
    from ..core.signals import deferred
    from ..experiments.session import RunInterrupted, RunStopped

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
    except RunStopped as stopped:
        if on_stopped is None:
            raise stopped.cause from None
        with deferred():
            on_stopped(stopped.results, str(stopped.cause))
        raise
