"""The command group: commands load lazily, errors become one line, signals become exit statuses.

This is the only place that maps exceptions to exit statuses (status.ExitStatus): usage errors exit 2,
runtime failures 1, Ctrl-C 130, SIGTERM 143 and SIGHUP 129, each with one line on stderr and never a
traceback (unless --traceback asks for it). A stdout whose reader went away (`| head`) ends a command with
141 (128 + SIGPIPE, what a shell shows for a C tool killed by it) and nothing on stderr.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import importlib
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn, TypeVar

import click

from ..core.errors import AcceptOrderError, OutputError
from ..core.signals import ArrivalOrder, interruptible, signal_of
from ..core.status import ExitStatus
from ..experiments import commands

F = TypeVar("F", bound=Callable[..., Any])

# name -> module under accept_order.cli holding a click command of that name (loaded only when used): the
# commands that make results, as the experiments' registry lists them, then those that read result files
READERS = ("merge", "show", "plot", "modes")  # they start no process, whenever a signal lands
COMMANDS: dict[str, str] = {**{name: name for name in commands()}, **{name: name for name in READERS}}
STOPPED_META = "accept_order.stopped"  # ctx.meta: what an interrupted command says it ended (see _what_stopped)
BODY_META = "accept_order.body"  # ctx.meta: the command's body was entered (before it, nothing was started)
NOTHING_STARTED = "nothing was started"
# The machine ran out of something: errno -> where to look (ENOSPC and ENOMEM name their cause themselves).
_RESOURCE_ERRNOS = {
    errno.EMFILE: " (check `ulimit -n`)",
    errno.ENFILE: " (the system's open-file limit, fs.file-max)",
    errno.EAGAIN: " (check `ulimit -u`)",
    errno.ENOMEM: "",
    errno.ENOSPC: "",
}


def fail(message: str, status: int) -> NoReturn:
    from ..core.text import escape_controls
    from .output import discard_stdout, flush_stdout, tolerant, unless_stderr_gone

    try:
        flush_stdout()
    except OutputError:
        discard_stdout()  # the error line is what matters now
    if sys.stderr is not None:
        tolerant(sys.stderr)
        # stderr gone too (its reader, a full disk, a terminal that hung up): it goes to /dev/null, so that
        # Python's own flush at exit cannot fail and turn the status into 120; the status is all that is left
        with unless_stderr_gone():
            click.echo(f"accept-order: error: {escape_controls(message)}", err=True)
    sys.exit(status)


def output_failed(exc: OutputError) -> NoReturn:
    """stdout could not take the report: its reader gone (`| head`) ends the command as it ends a C tool,
    quietly; a closed or full stdout is one line."""
    from .output import discard_stdout

    discard_stdout()
    if exc.broken_pipe:
        sys.exit(ExitStatus.BROKEN_PIPE)
    fail(str(exc), exc.exit_code)


_BY_SIGNAL: dict[int, tuple[ExitStatus, str]] = {
    signal.SIGINT: (ExitStatus.INTERRUPTED, "interrupted"),
    signal.SIGTERM: (ExitStatus.TERMINATED, "terminated"),
    signal.SIGHUP: (ExitStatus.HUNG_UP, "hung up"),
}


def interrupted_status(exc: KeyboardInterrupt, first: int | None = None) -> ExitStatus:
    """130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP: the signal that arrived first (`first`, when
    known) decides."""
    return _BY_SIGNAL[first if first in _BY_SIGNAL else signal_of(exc)][0]


def interrupted_word(status: int) -> str:
    """How the one line names an interrupted command's end: "interrupted", "terminated", "hung up"."""
    return next((word for code, word in _BY_SIGNAL.values() if code == status), "interrupted")


def handle_errors(func: F) -> F:
    """Map the harness's errors, running out of resources, Ctrl-C and SIGTERM to one stderr line and
    an exit status. The workers are already stopped: every owner ended them on the way out."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        order = ArrivalOrder().__enter__()  # which signal came first, if two race (see its docstring)
        try:
            with interruptible():  # the command's body: the first signal is raised where it lands
                from .room import check_room_for

                check_room_for(func.__name__, kwargs)  # a full disk is said before the run, not after it
                _mark_body()
                return func(*args, **kwargs)
        except OutputError as exc:
            if _traceback_wanted():
                raise
            output_failed(exc)
        except AcceptOrderError as exc:
            if _traceback_wanted():
                raise
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt as exc:
            status = interrupted_status(exc, order.first())
            fail(f"{interrupted_word(status)}; {_what_stopped()}", status)
        except RuntimeError as exc:
            # Python 3.11 wraps what a class attribute's __set_name__ raises: a signal landing while a module
            # defines a dataclass (Field.__set_name__) ended observe 0.7 s in with a RuntimeError traceback
            if not isinstance(exc.__cause__, KeyboardInterrupt) or _traceback_wanted():
                raise
            status = interrupted_status(exc.__cause__, order.first())
            fail(f"{interrupted_word(status)}; {_what_stopped()}", status)
        except OSError as exc:
            if exc.errno not in _RESOURCE_ERRNOS or _traceback_wanted():
                raise
            fail(f"{exc.strerror}{_RESOURCE_ERRNOS[exc.errno]}", ExitStatus.ERROR)
        except MemoryError:
            fail("out of memory", ExitStatus.ERROR)
        finally:
            order.__exit__()

    return wrapper  # type: ignore[return-value]


@contextlib.contextmanager
def _stdout_blamed() -> Iterator[None]:
    """An OSError raised where click writes to stdout (its --help, --version) becomes OutputError; any
    other OSError is left as it is."""
    try:
        yield
    except OSError as exc:
        if not _click_writing_stdout(exc):
            raise
        broken = exc.errno == errno.EPIPE
        reason = "its reader has gone" if broken else exc.strerror or str(exc)
        raise OutputError(f"cannot write to stdout: {reason}", broken_pipe=broken) from None


def _click_writing_stdout(exc: BaseException) -> bool:
    """The innermost frame of click's in `exc` writes to a `file` on descriptor 1 (click.echo; the frames
    below it, if any, are sys.stdout's whole writes, cli/whole.py)."""
    tb, clicks = exc.__traceback__, None
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__")).startswith("click."):
            clicks = tb.tb_frame
        elif tb.tb_frame.f_globals.get("__name__") != f"{__package__}.whole":
            clicks = None  # something click called (a command's body): not click's own write, unless deeper
        tb = tb.tb_next
    if clicks is None:
        return False
    try:
        return bool(clicks.f_locals["file"].fileno() == 1)
    except (KeyError, AttributeError, OSError, ValueError):
        return False


def _mark_body() -> None:
    from ..core.started import Started

    Started.begun = False  # nothing of this command's has started yet (an earlier command's in-process: the tests)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[BODY_META] = True


def _what_stopped() -> str:
    """What an interrupted command ended: what the command put in its context's meta (a command that starts
    nothing, such as observe, must not say it stopped a server it only watched), else its workers; nothing
    where its body had not begun (a Ctrl-C 0.5 s into inspect said 'all workers stopped'), nor started any owner
    of processes (core/started.Started: the pool, a server, the load), or it only reads files."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return "all workers stopped"
    if STOPPED_META in ctx.meta:
        return str(ctx.meta[STOPPED_META])
    if not ctx.meta.get(BODY_META) or ctx.info_name in READERS:
        return NOTHING_STARTED
    from ..core.started import Started

    # the body's first half second (run: 0.45 to 1.1 s in at load 8) plans and imports before any worker starts
    return "all workers stopped" if Started.begun else NOTHING_STARTED


def _traceback_wanted() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get("traceback"))


_FROZEN: list[bool] = []  # [True] once started() froze start-up's objects: the command line's own process


def started() -> None:
    """The command line's start-up is over (its command's module imported): what it made is frozen (gc.freeze:
    never traversed again, nor copied into the workers forked from here by a collection touching it) and
    the collector, held since cli.main, runs again for the command's body. A no-op where it was never held
    (click's test runner, an API caller)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
        _FROZEN[:] = [True]


@contextlib.contextmanager
def modules_held() -> Iterator[None]:
    """The modules a command imports in its body (there, not with the command, so that --help does not): made
    with the collector held and frozen, as start-up's are (a run's were 16 passes, ~6 M instructions of its 379 M,
    issue 30). Where start-up froze nothing (click's test runner, an API caller), the collector is left as it is
    and nothing is frozen."""
    if not _FROZEN or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


class LazyGroup(click.Group):
    """Commands imported on first use (flask's cli and click's `complex` example do the same), and
    click's three-line usage errors folded into the one line this tool promises."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        command = getattr(importlib.import_module(f"{__package__}.{module}"), cmd_name.replace("-", "_"))
        assert isinstance(command, click.Command)
        started()
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command suggests the nearest ones (`runn`: did you mean run?), as git does."""
        name = click.utils.make_str(args[0])
        if name not in COMMANDS and not name.startswith("-"):
            import difflib  # only for a name that is not a command

            near = difflib.get_close_matches(name, list(COMMANDS), n=2, cutoff=0.6)
            if near:
                ctx.fail(f"no command {name!r}; did you mean {' or '.join(repr(n) for n in near)}?")
        return super().resolve_command(ctx, args)

    # click prints --help and --version itself, while parsing: a stdout that cannot take them is the same
    # OutputError as a report's (click alone would end a closed pipe with 1, a full disk with a traceback).
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _stdout_blamed():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        with _stdout_blamed():
            return super().invoke(ctx)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not (sys.argv[1:] if args is None else list(args)):
            # Bare `accept-order`: the help, as `accept-order --help` prints it (click would make it an error).
            args = ["--help"]
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
            fail(_hosts_elsewhere(exc) or _not_attaching(exc) or exc.format_message() + hint, ExitStatus.USAGE)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except OutputError as exc:  # a command without handle_errors (modes)
            output_failed(exc)
        except (click.Abort, KeyboardInterrupt) as exc:
            status = interrupted_status(exc) if isinstance(exc, KeyboardInterrupt) else ExitStatus.INTERRUPTED
            fail(interrupted_word(status), status)


HOST_OPTIONS = ("--clients", "--client-hosts", "--observe-on", "--ssh-config", "--client-python")


def _hosts_elsewhere(exc: click.UsageError) -> str | None:
    """A client-host option given to a command that drives from this host only: click's own line suggested the
    nearest option ('run --client-hosts': "Did you mean '--host'?", which is where the server listens)."""
    if not isinstance(exc, click.NoSuchOption) or exc.option_name not in HOST_OPTIONS or exc.ctx is None:
        return None
    # a command that drives a load has --driver (the load generator's loop); one that can drive it from client
    # hosts has them too: read from its options, not a list of names beside the registry's
    params = {param.name for param in exc.ctx.command.params}
    if "driver" not in params or "client_hosts" in params:
        return None
    return (
        f"{exc.ctx.command_path} has no {exc.option_name}: it drives its load from this host only; latency, sweep, "
        "ramp and burst drive it from client hosts with --client-hosts"
    )


def _not_attaching(exc: click.UsageError) -> str | None:
    """--attach given to a command that drives a load and has none: click suggested the nearest option ('ramp
    --attach': "Did you mean '--accept-batch'?"), and a user with a server of their own running was not told what
    drives it. Which commands attach, or drive one elsewhere (--target), is read from their options, not a list."""
    if not isinstance(exc, click.NoSuchOption) or exc.option_name != "--attach" or exc.ctx is None:
        return None
    group, ctx = exc.ctx.find_root().command, exc.ctx.find_root()
    if not isinstance(group, click.Group) or not any(p.name == "driver" for p in exc.ctx.command.params):
        return None  # a command that drives no load (show, inspect): click's line stands
    commands = {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}
    attaching = [name for name, c in commands.items() if c is not None and any(p.name == "attach" for p in c.params)]
    elsewhere = any(p.name == "target" for p in exc.ctx.command.params)
    target = (
        ", or drives one elsewhere by --target, whose replies must name their worker ('worker PID')"
        if elsewhere
        else ""
    )
    return (
        f"{exc.ctx.command_path} has no --attach: it starts the server it measures{target}; a server already "
        f"running is driven by {' and '.join(attaching)} --attach, and read by inspect and observe"
    )


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="accept-order")
@click.option("--traceback", is_flag=True, help="On an error, show the Python traceback behind the one-line message.")
def main(traceback: bool) -> None:
    """Show, measure and explain how the kernel hands new TCP connections to worker processes.

    Start with 'accept-order run', then 'accept-order compare'; 'accept-order modes' lists the modes.
    """
