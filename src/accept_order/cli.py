"""Command line: thin commands that turn options into a Plan, call the API and print the report.

This is the only place that maps errors to exit codes: usage errors exit 2, runtime failures 1,
Ctrl-C 130 and SIGTERM 143, each with one line on stderr and never a traceback.
"""

from __future__ import annotations

import enum
import functools
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.errors import NotRenderableError
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import api, records, report
from .errors import AcceptOrderError, PlanError, ResultFileError
from .modes import CORE_MODES, MODES, describe_modes, parse_modes, split_available

F = TypeVar("F", bound=Callable[..., Any])
MAX_CPU = 4096  # a wider range is refused before a list of its CPUs is built


class ExitStatus(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    USAGE = 2
    INTERRUPTED = 130  # 128 + SIGINT
    TERMINATED = 143  # 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every `with` block tears its workers down on the way out."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated


PIPED_WIDTH = 120  # rich's 80 columns off a terminal would cut table cells; COLUMNS still wins


def stdout() -> Console:
    piped = not sys.stdout.isatty() and "COLUMNS" not in os.environ
    return Console(highlight=False, width=PIPED_WIDTH if piped else None)


def stderr() -> Console:
    return Console(stderr=True, highlight=False)


def fail(message: str, status: int) -> None:
    click.echo(f"accept-order: error: {message}", err=True)
    sys.exit(status)


def handle_errors(func: F) -> F:
    """Map the harness's errors, Ctrl-C and SIGTERM to one stderr line and an exit status."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
        try:
            return func(*args, **kwargs)
        except AcceptOrderError as exc:
            fail(str(exc), exc.exit_code)
        except Terminated:
            fail("terminated; all workers stopped", ExitStatus.TERMINATED)
        except KeyboardInterrupt:
            fail("interrupted; all workers stopped", ExitStatus.INTERRUPTED)
        finally:
            signal.signal(signal.SIGTERM, previous)

    return wrapper  # type: ignore[return-value]


def mode_option(default: str = "epoll") -> Callable[[F], F]:
    return click.option(
        "--mode",
        "-m",
        type=click.Choice(list(MODES)),
        default=default,
        show_default=True,
        help="How workers wait for connections.",
    )


def parse_cpus(
    ctx: click.Context | None, param: click.Parameter | None, value: str | None
) -> tuple[int, ...]:
    if not value:
        return ()
    cpus: list[int] = []
    try:
        for part in value.split(","):
            low, _, high = part.partition("-")
            first, last = int(low), int(high or low)
            if first < 0 or last < first or last - first >= MAX_CPU:
                raise ValueError
            cpus.extend(range(first, last + 1))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a CPU list such as 0-1 or 0,2") from None
    return tuple(cpus)


def server_options(func: F) -> F:
    """Options shared by every command that starts workers."""
    options = [
        click.option("--workers", "-w", type=int, default=3, show_default=True, help="Worker processes."),
        click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on."),
        click.option("--port", "-p", type=int, default=0, show_default=True, help="Port (0: ephemeral)."),
        click.option(
            "--work-ms",
            type=float,
            default=0.0,
            show_default=True,
            help="CPU a worker burns per connection before it answers.",
        ),
        click.option("--backlog", type=int, default=511, show_default=True, help="listen() backlog."),
        click.option(
            "--accept-batch",
            type=int,
            default=0,
            show_default=True,
            help="Most connections accepted per wakeup (0: until EAGAIN).",
        ),
        click.option(
            "--cpus",
            callback=parse_cpus,
            default=None,
            help="Pin worker i to the i-th CPU of this list, e.g. 0-1.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def timeout_option(default: float = 5.0, what: str = "connection") -> Callable[[F], F]:
    return click.option(
        "--timeout",
        "timeout_s",
        type=float,
        default=default,
        show_default=True,
        help=f"Seconds a {what} may take before it counts as failed.",
    )


def _writable_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a results path that cannot be written before the run, not after it."""
    if value is None:
        return None
    target = Path(value)
    if target.is_dir():
        raise click.BadParameter(f"{value} is a directory")
    folder = target.parent
    if not folder.is_dir():
        raise click.BadParameter(f"directory {folder} does not exist")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise click.BadParameter(f"{value} is not writable")
    return value


def json_option(help: str = "Write the result as JSON.") -> Callable[[F], F]:
    return click.option("--json", "json_path", callback=_writable_path, help=help)


def modes_option(default: Sequence[str], help: str) -> Callable[[F], F]:
    def parse(ctx: click.Context, param: click.Parameter, value: str) -> list[str]:
        try:
            return parse_modes(value)
        except PlanError as exc:
            raise click.BadParameter(str(exc)) from None

    return click.option(
        "--modes", "modes", default=",".join(default), show_default=True, callback=parse, help=help
    )


def drive_options(func: F) -> F:
    options = [
        click.option(
            "--connections",
            "-n",
            type=int,
            default=6,
            show_default=True,
            help="Connections to drive, one after the other.",
        ),
        click.option(
            "--gap-ms",
            type=float,
            default=0.0,
            show_default=True,
            help="Start connection k at k*gap (0: each when the previous one has finished).",
        ),
        timeout_option(),
        click.option(
            "--no-settle",
            is_flag=True,
            help="Do not wait for idle workers to be asleep before each connection.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def plan_from(options: dict[str, Any]) -> records.Plan:
    options = dict(options)
    options["settle"] = not options.pop("no_settle", False)
    return api.make_plan(**options)


@contextmanager
def progress_for(total: int, label: str, threshold: int = 200) -> Iterator[Callable[[Any], None]]:
    """A progress bar on stderr for long runs on a terminal; a no-op callback otherwise."""
    console = stderr()
    if total < threshold or not console.is_terminal:
        yield lambda _record: None
        return
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda _record: progress.advance(task)


class OneLineErrors(click.Group):
    """click prints usage errors over three lines; this tool promises one line on stderr and exit 2."""

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
        except click.Abort:
            fail("interrupted", ExitStatus.INTERRUPTED)
        except KeyboardInterrupt:
            fail("interrupted", ExitStatus.INTERRUPTED)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="accept-order")
def main() -> None:
    """Show, measure and explain how the kernel hands new TCP connections to worker processes."""


@main.command()
@mode_option()
@server_options
@drive_options
@json_option("Write the whole run as JSON.")
@handle_errors
def run(json_path: str | None, **options: Any) -> None:
    """Start workers, drive connections at them one by one, show who served each."""
    plan = plan_from(options)
    with progress_for(plan.connections, f"{plan.mode}: connections") as advance:
        result = api.run_plan(plan, on_record=advance)
    if json_path:
        records.save(json_path, "run", result.to_dict())
    stdout().print(report.run_report(result))
    if json_path:
        stderr().print(f"wrote {json_path}")


@main.command()
@modes_option(CORE_MODES, "Comma-separated modes to compare.")
@server_options
@drive_options
@json_option("Write every run as JSON.")
@handle_errors
def compare(modes: list[str], json_path: str | None, **options: Any) -> None:
    """Run every mode this machine supports with the same settings; one table side by side."""
    available, skipped = split_available(modes)
    plans = [plan_from({**options, "mode": name}) for name in available]  # all checked before any runs
    results = [api.run_plan(plan) for plan in plans]
    if json_path:
        records.save(json_path, "compare", {"runs": [r.to_dict() for r in results], "skipped": skipped})
    stdout().print(report.compare_table(results, skipped))


@main.command()
@mode_option(default="blocking")
@server_options
@click.option("--no-settle", is_flag=True, hidden=True)
@handle_errors
def serve(**options: Any) -> None:
    """Keep workers up for connections by hand (e.g. nc); Ctrl-C stops them and prints the tally."""
    from .supervisor import WorkerPool

    plan = plan_from(options)
    out = stdout()
    pool = WorkerPool(plan)
    with pool:
        # The banner is inside the try: a Ctrl-C that follows it at once (before the wait begins) must
        # still stop the server the normal way, with the tally.
        try:
            host, port = pool.address
            out.print(
                f"accept-order serve: mode {plan.mode}, {plan.workers} workers listening on {host}:{port}"
            )
            for index, pid in enumerate(pool.pids):
                out.print(f"  worker {index} pid {pid}")
            hint = f"try: for i in $(seq 6); do nc {host} {port}; done    (Ctrl-C to stop)"
            out.print(hint, soft_wrap=True)
            sys.stdout.flush()
            pool.wait_for_death()  # returns only by raising: a worker died, or Ctrl-C / SIGTERM
        except KeyboardInterrupt:
            # Ctrl-C and SIGTERM are how a server is stopped: stop the workers, show the tally, exit 0.
            counters = pool.stop()
            out.print(report.worker_table(counters, [c.accepts for c in counters], title="tally"))


@main.command()
@click.argument("path", type=click.Path(dir_okay=False))
@handle_errors
def show(path: str) -> None:
    """Print a saved result again."""
    kind, document = records.load(path)
    out = stdout()
    # Rich renders lazily, so a hand-edited field can still fail while printing: render it all first,
    # and print nothing but one line if it does not render.
    try:
        with out.capture() as captured:
            # crop=False: verbatim lines (mmhistogram output) may be wider than 80 columns when piped.
            out.print(report.render_document(kind, document), crop=False)
    except (NotRenderableError, KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ResultFileError(f"malformed {kind!r} result ({exc})") from None
    sys.stdout.write(captured.get())


@main.command(name="modes")
def list_modes() -> None:
    """List the accept modes and whether this machine supports each."""
    out = stdout()
    for info in describe_modes():
        status = "available" if info.unavailable is None else f"not available: {info.unavailable}"
        out.print(f"[bold]{info.name:13}[/bold] {info.summary} ({status})")


from . import cli_herd  # noqa: E402,F401  (registers its commands)
from . import cli_latency as _cli_latency  # noqa: E402,F401  (registers its commands)
