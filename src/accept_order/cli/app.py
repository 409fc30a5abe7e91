"""The command group: commands load lazily, errors become one line, signals become exit statuses.

This is the only place that maps exceptions to exit statuses (status.ExitStatus): usage errors exit 2,
runtime failures 1, Ctrl-C 130, SIGTERM 143 and SIGHUP 129, each with one line on stderr and never a traceback
(unless --traceback asks for it).
"""

from __future__ import annotations

import errno
import functools
import importlib
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

import click

from ..errors import AcceptOrderError
from ..signals import ArrivalOrder, interruptible, signal_of
from ..status import ExitStatus

F = TypeVar("F", bound=Callable[..., Any])

# name -> module under accept_order.cli holding a click command of that name (loaded only when used)
COMMANDS: dict[str, str] = {
    "run": "run",
    "compare": "compare",
    "serve": "serve",
    "latency": "latency",
    "sweep": "sweep",
    "herd": "herd",
    "reload": "reload",
    "burst": "burst",
    "ramp": "ramp",
    "merge": "merge",
    "show": "show",
    "plot": "plot",
    "modes": "modes",
}
_RESOURCE_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.EAGAIN, errno.ENOMEM, errno.ENOSPC}


def fail(message: str, status: int) -> NoReturn:
    from ..results.files import inert
    from .output import unless_hung_up

    with unless_hung_up():  # a terminal that hung up: the line goes nowhere, the status still says why
        sys.stdout.flush()
        click.echo(f"accept-order: error: {inert(message)}", err=True)
    sys.exit(status)


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
                return func(*args, **kwargs)
        except AcceptOrderError as exc:
            if _traceback_wanted():
                raise
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt as exc:
            status = interrupted_status(exc, order.first())
            fail(f"{interrupted_word(status)}; all workers stopped", status)
        except OSError as exc:
            if exc.errno not in _RESOURCE_ERRNOS or _traceback_wanted():
                raise
            fail(f"{exc.strerror} (check `ulimit -n` and `ulimit -u`)", ExitStatus.ERROR)
        except MemoryError:
            fail("out of memory", ExitStatus.ERROR)
        finally:
            order.__exit__()

    return wrapper  # type: ignore[return-value]


def _traceback_wanted() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get("traceback"))


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
        return command

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
            fail(exc.format_message() + hint, ExitStatus.USAGE)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except (click.Abort, KeyboardInterrupt) as exc:
            status = interrupted_status(exc) if isinstance(exc, KeyboardInterrupt) else ExitStatus.INTERRUPTED
            fail(interrupted_word(status), status)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="accept-order")
@click.option("--traceback", is_flag=True, help="On an error, show the Python traceback behind the one-line message.")
def main(traceback: bool) -> None:
    """Show, measure and explain how the kernel hands new TCP connections to worker processes.

    Start with 'accept-order run', then 'accept-order compare'; 'accept-order modes' lists the modes.
    """
