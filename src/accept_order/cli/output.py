"""Where the CLI prints: stdout for reports, stderr for notes, progress bars and errors.

Every write goes whole: a full non-blocking pipe is waited for (cli/whole.py). A write to stdout that
fails becomes one OutputError naming stdout (closed, a full disk), or, when its reader went away (`| head`:
EPIPE), a quiet end (cli/app.py decides the status); a line stderr cannot take is dropped, and the
command's status stands (there is nowhere left to say it). A character the
stream's encoding lacks (PYTHONIOENCODING=ascii, "µs") is spelled in ASCII ("us") instead of ending the
command with a UnicodeEncodeError. A terminal that hung up (every write EIO) is no error of the command:
stdout and stderr go to /dev/null from then on, and the hang-up decides how it ends (129).
"""

from __future__ import annotations

import codecs
import errno
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import IO, TYPE_CHECKING, Any

from ..core.errors import OutputError
from ..core.finished import outcome_text, short_outcome_text
from ..core.text import escape_controls
from .whole import WholeFile, write_all

if TYPE_CHECKING:  # rich is imported with the first console (cli/consoles.py): --help and a usage error print none
    from rich.console import Console

PIPED_WIDTH = 120  # tables off a terminal (rich's 80 columns would cut cells); prose is not wrapped; COLUMNS wins
# `--json -`: the result's JSON on stdout, in place of the report (click.File's convention, and what jq expects)
RESULT_TO_STDOUT = "-"

# What the reports use beyond ASCII, spelled in ASCII for a stream that cannot encode it; anything else "?".
_ASCII = {
    "µ": "u",
    "×": "x",
    "–": "-",
    "—": "-",
    "…": "...",
    "≥": ">=",
    "≤": "<=",
    "±": "+/-",
    "·": ".",
    "→": "->",
    "█": "#",
    "░": ".",
}
SPELL_ASCII = "accept-order-ascii"


def _spell(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(_ASCII.get(c, "?") for c in exc.object[exc.start : exc.end]), exc.end


codecs.register_error(SPELL_ASCII, _spell)


def tolerant(stream: Any) -> Any:
    """`stream`, set (once) to spell what its encoding lacks instead of raising; a UTF stream is left as it is."""
    try:
        utf = codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name.startswith("utf")
    except LookupError:
        utf = False
    if not utf and getattr(stream, "errors", SPELL_ASCII) != SPELL_ASCII and hasattr(stream, "reconfigure"):
        with _naming("stdout" if stream is sys.stdout else "stderr"):
            stream.reconfigure(errors=SPELL_ASCII)
    return stream


@contextmanager
def _naming(name: str) -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        raise OutputError(f"cannot write to {name}: its reader has gone", broken_pipe=True) from None
    except OSError as exc:
        if exc.errno == errno.EIO:  # a terminal that hung up: not an error of this command (see below)
            _to_devnull()
            return
        raise OutputError(f"cannot write to {name}: {exc.strerror or exc}") from None


class _Closed:
    """stdout when the caller closed it (`>&-`): Python leaves sys.stdout None; a write is EBADF, as for a C tool."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "it is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class _Guarded:
    """A text stream whose write errors become OutputError naming it (rich writes through this)."""

    def __init__(self, stream: IO[str] | _Closed, name: str) -> None:
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        with _naming(self._name):
            return _write_whole(self._stream, text)

    def flush(self) -> None:
        with _naming(self._name):
            self._stream.flush()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._stream, attr)


def _write_whole(stream: Any, text: str) -> int:
    """All of `text` to `stream`, through its descriptor when it has one. A descriptor left non-blocking by
    whoever made it (a pipe from an event loop) takes only what fits (64 KiB), and Python's text stream
    drops the rest without a word; here a full pipe is waited for (cli/whole.py) until it has taken
    everything, and a reader that went away is EPIPE as ever (a quiet 141)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # none: click's CliRunner, a closed stdout (_Closed)
        return int(stream.write(text))
    data = text.encode(stream.encoding or "utf-8", stream.errors or "strict")
    if os.get_blocking(fd) or isinstance(getattr(getattr(stream, "buffer", None), "raw", None), WholeFile):
        stream.flush()  # what was written through the stream before goes first (whole, if it is a WholeFile)
    else:  # a stream that would drop what does not fit: flush what it holds in blocking mode, briefly
        os.set_blocking(fd, True)
        try:
            stream.flush()
        finally:
            os.set_blocking(fd, False)
    write_all(fd, data)
    return len(text)


def guarded_stdout() -> Any:
    """stdout as a text stream whose write errors are OutputError naming it (`>&-`: one whose writes say closed)."""
    return _Guarded(_Closed() if sys.stdout is None else tolerant(sys.stdout), "stdout")


def naming_stdout() -> AbstractContextManager[None]:
    """A block whose OSError writing to stdout becomes OutputError naming it (a hung-up terminal: no error)."""
    return _naming("stdout")


def stdout() -> Console:
    from .consoles import ReportConsole

    stream = guarded_stdout()
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return ReportConsole(piped, file=stream, width=PIPED_WIDTH if piped else None)  # a text stream in all but name


def stderr() -> Console:
    from .consoles import SafeConsole

    if sys.stderr is not None:
        tolerant(sys.stderr)
    return SafeConsole(stderr=True)


def _to_devnull(fds: tuple[int, ...] = (1, 2)) -> None:
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in fds:
        os.dup2(null, fd)
    os.close(null)


@contextmanager
def unless_hung_up() -> Iterator[None]:
    """Output that may meet a terminal that hung up (SIGHUP: every write to it now fails with EIO). From
    then on stdout and stderr go to /dev/null, so that what is left to do still happens: the result is
    saved, every process ended, and the exit status says how the run ended (the hang-up's 129)."""
    try:
        yield
    except OSError as exc:
        if exc.errno != errno.EIO:
            raise
        _to_devnull()


@contextmanager
def unless_stderr_gone() -> Iterator[None]:
    """A line for stderr that stderr cannot take (its reader gone, a full disk): there is nothing left to say
    so on, and it is no error of the command, whose exit status stands. stderr goes to /dev/null from then
    on, so that Python's own flush at exit cannot fail again (an "Exception ignored" and status 120); a
    terminal that hung up (EIO) takes stdout with it, as in unless_hung_up."""
    try:
        yield
    except OSError as exc:
        _to_devnull((1, 2) if exc.errno == errno.EIO else (2,))


def flush_stdout() -> None:
    """Flush what the report left buffered (OutputError if stdout cannot take it)."""
    if sys.stdout is not None:
        with _naming("stdout"):
            sys.stdout.flush()


def discard_stdout() -> None:
    """After stdout failed: what is still buffered for it goes nowhere (stdout now writes to /dev/null), so
    Python's own flush at exit cannot fail again with an "Exception ignored" message."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # None, or not a real file (click's CliRunner)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def note(text: str) -> None:
    """One line on stderr (after flushing stdout, so the report comes first on a shared terminal); a line
    break in it (from a file name) is escaped too, so it stays one line. A stderr that cannot take it ends
    nothing (unless_stderr_gone)."""
    flush_stdout()
    with unless_stderr_gone():
        stderr().print(escape_controls(text), soft_wrap=True)


def write_text(text: str) -> None:
    """Text as it is (CSV, JSON, a captured report) to stdout, flushed (OutputError if it cannot take it)."""
    stream = guarded_stdout()
    stream.write(text)
    stream.flush()


def print_report(renderable: Any) -> None:
    from ..render.fit import fitted

    clear_progress()  # a bar still on the terminal would have the report's first line glued to its frame

    # crop=False: verbatim lines (mmhistogram output) are wider than 80 columns and must print whole.
    stdout().print(fitted(renderable), crop=False)
    flush_stdout()


_BARS: list[Any] = []  # the progress bars on the terminal now (rich Progress)
# Columns a bar leaves free at the right edge: a Ctrl-C typed while it is shown is echoed by the terminal
# ("^C") after it, and a bar that filled the line would push that echo onto the next line, leaving rich to
# erase the wrong line at the end (the bar then stays above the report, frozen). Room for two.
ECHO_ROOM = 4


def _stop(bar: Any) -> None:
    """Erase a bar (or a live view) with signals held: a Ctrl-C landing halfway through rich's stop would leave
    it marked stopped with its line still drawn; the signal is raised once the line is gone."""
    from ..core.signals import deferred

    with deferred(), unless_hung_up():  # erasing must not replace the run's own end (a hang-up's 129)
        bar.stop()


def _start(bar: Any) -> None:
    from ..core.signal_order import main_thread_only
    from ..core.signals import deferred

    with deferred(), unless_hung_up(), main_thread_only():  # rich's refresh thread must not take the signals
        bar.start()


def _bar_console() -> Console | None:
    """stderr's console for a bar or a live view, ECHO_ROOM narrower than the terminal; None off a terminal."""
    console = stderr()
    if not console.is_terminal:
        return None
    console.width = max(console.width - ECHO_ROOM, 20)
    return console


def clear_progress() -> None:
    """Erase every progress bar still shown (they are transient): what follows starts on a clean line."""
    while _BARS:
        _stop(_BARS.pop())


@contextmanager
def progress_bar(
    label: str | Callable[[], str],
    total: float | None,
    by_count: bool = True,
    threshold: float = 0,
    timeout_s: float | None = None,
    ticks: bool = False,
    unit: str = "connections",
) -> Iterator[Callable[..., None]]:
    """A transient progress bar on stderr for long runs on a terminal; a no-op callback otherwise.

    The callback takes (done, elapsed_s): completed connections, and seconds for a duration run. `label` may
    be a function, read at each redraw (a run's estimate of the time left). After the figures, what a full
    or stalled bar is still waiting for (progress.BarState: `timeout_s`, the load's; `ticks`, the callback
    comes every tick of the load); `unit`, what a duration run's count counts (a kept connection's requests)."""
    console = _bar_console()
    if console is None or (total is not None and total < threshold):
        yield lambda *_: None
        return
    from rich.progress import MofNCompleteColumn, TextColumn

    from .bars import BarState, bar_layouts, fitted_progress

    state = BarState(total, by_count, timeout_s, ticks)
    count = MofNCompleteColumn() if by_count else TextColumn(f"{{task.fields[done]}} {unit}")
    layouts = bar_layouts(label if callable(label) else lambda: label, state, count)
    bar = fitted_progress(layouts, console=console, transient=True, expand=True)  # the bar takes what is left
    _BARS.append(bar)
    try:
        _start(bar)
        task = bar.add_task("", total=total, done=0, outcome="", short="")

        def update(done: int, elapsed: float = 0.0) -> None:
            state.update(done, elapsed)
            said = outcome_text(done)  # "" for a bare count (a tick that carries no split)
            completed = done if by_count else min(elapsed, total or 0.0)
            bar.update(task, completed=completed, done=done, outcome=said, short=short_outcome_text(done))

        yield update
    finally:
        if bar in _BARS:
            _BARS.remove(bar)
        _stop(bar)


@contextmanager
def live_view(
    render: Callable[[Any], Any], line: Callable[[Any], str], transient: bool = True
) -> Iterator[Callable[[Any], None]]:
    """A view on stderr that `update(value)` redraws in place (rich Live) on a terminal; off a terminal,
    one plain line per update (`line(value)`), as a log would have it."""
    console = _bar_console()
    if console is None:
        yield lambda value: note(line(value))
        return
    from rich.live import Live

    live = Live(console=console, transient=transient, auto_refresh=False)

    def update(value: Any) -> None:
        with unless_hung_up():  # a terminal gone mid-run: the observation goes on, its result is saved
            live.update(render(value), refresh=True)

    try:
        _start(live)
        yield update
    finally:
        _stop(live)
