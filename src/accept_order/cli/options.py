"""One shared option set: the same option means the same thing, with the same name, in every command.

- What serves (every command that starts workers): --mode/--modes, --server, --workers, --host, --port,
  --work/--work-iters, --backlog, --accept-batch, --cpus, --pin.
- What drives: --connections/-n (how many connections, in every command), --timeout; sequential runs add
  --gap and --no-settle; closed-loop runs add --duration, --concurrency, --driver-procs.
- --json FILE: write the result (refused before the run if the path may not be written).

Each command declares only the options it accepts (reload has no -n, nor --target): its --help
shows what it takes, with the defaults it uses. Durations take a unit everywhere (2s, 500ms, 2m); a bare
number other than 0 is refused, naming the unit to add (before units it was seconds, but ms for --work and
--gap). Old spellings (--work-ms, --work-us, --gap-ms: they name their unit; --servers) are accepted, not
shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..core.kinds import KindOption
from ..core.spec import (
    DEFAULT_HOST,
    MAX_ACCEPT_BATCH,
    MAX_BACKLOG,
    MAX_WORK_ITERS,
    MAX_WORK_US,
    MAX_WORKERS,
    ServerSpec,
)
from ..servers.registry import DEFAULT_KIND, declared_options, launched_kinds
from .load_options import apply as apply
from .load_options import load_cpus_option as load_cpus_option
from .load_options import load_options as load_options
from .load_options import sequential_options as sequential_options
from .load_options import timeout_option as timeout_option
from .sweep_caps import DEFAULT_HELP as SWEEP_DEFAULT_HELP
from .types import (
    CPUS,
    DURATION,
    HOST,
    MODE,
    MODE_LIST,
    AliasOption,
    Duration,
    IntList,
    IntRange,
    ServerList,
    judge_pending_modes,
    parse_int,
)

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_MODE_HELP = "How workers wait for connections (see 'accept-order modes')."


def mode_option() -> Callable[[F], F]:
    return click.option(
        "--mode",
        "-m",
        type=MODE,  # not a Choice: the modes of every server, 29 of them, made a 289-column help line
        default=None,
        help=f"{DEFAULT_MODE_HELP} [default: epoll, or the server's first mode where it has no epoll]",
    )


def modes_option(
    default: str = "all", help: str = "Comma-separated modes, or all (see 'accept-order modes')."
) -> Callable[[F], F]:
    return click.option("--modes", "modes", type=MODE_LIST, default=default, show_default=True, help=help)


def server_option(
    several: bool = False, kinds: tuple[str, ...] | None = None, default: str | None = DEFAULT_KIND, every: str = ""
) -> Callable[[F], F]:
    """--server, the same in every command: one kind, or a comma-separated list where `several` (one table
    across servers); --servers is the same option, accepted and not shown. `kinds`: those the command runs.
    `every`: what no --server means, where that is not one kind (atlas: every one installed)."""
    # The kinds are the registry's: a kind added there is named here without an edit.
    others = [name for name in kinds or launched_kinds() if name != DEFAULT_KIND]
    server_help = (
        f"What serves: {DEFAULT_KIND} (this tool's Python workers)"
        + (
            f", or a real server launched from a generated config: {', '.join(others)} (see 'accept-order modes')"
            if others
            else " only"
        )
        + ("; several, comma-separated, share one table." if several else ".")
        + (f" [default: {every}]" if every else "")
    )
    return click.option(
        "--server",
        "--servers",
        "server",
        cls=AliasOption,
        hidden_names=("--servers",),
        type=ServerList(several, kinds),
        default=default,
        show_default=default is not None,
        callback=judge_pending_modes,  # a bad --mode typed before --server is judged with its kinds
        help=server_help,
    )


def accept_batch_option(several: bool = False) -> Callable[[F], F]:
    """--accept-batch: one value, or (sweep) a list of them, one run each; the same parser and errors."""
    if several:
        return click.option(
            "--accept-batch",
            "batches",
            type=IntList(0, MAX_ACCEPT_BATCH),
            default=None,  # cli/sweep_caps.py: the server's own among sweep's
            help="Caps on connections accepted per wakeup to try, one run each (0: until EAGAIN) "
            f"[default: {SWEEP_DEFAULT_HELP}].",
        )
    return click.option(
        "--accept-batch",
        type=IntList(0, MAX_ACCEPT_BATCH, several=False),
        default=None,
        help="Most connections accepted per wakeup (0: until EAGAIN) [default: the server's own: 0 for "
        "builtin, 1 for nginx, whose multi_accept is off unless this is 0].",
    )


def work_options() -> Callable[[F], F]:
    """--work 1ms; --work-ms and --work-us, its old spellings, still parse (they name their unit: a bare
    number is in it)."""
    most = MAX_WORK_US / 1e6
    return apply(
        [
            click.option(
                "--work",
                "work_s",
                type=Duration(zero=True, high=most, was="ms"),
                default="0ms",
                show_default=True,
                help="How long a worker spins per request before it answers it (each request of a kept connection "
                "too, where the command keeps them), e.g. 1ms or 200us: a busy loop (not a sleep) until that "
                "much wall-clock time has passed, so a worker that waits for a CPU meanwhile burns less (nginx's and "
                "lighttpd's loops: until their worker process has used that much CPU; HAProxy's until the request "
                "has used that much of its thread's, or of its process's where Debian's lua-posix is missing, whose "
                "threads then use it together and burn less each; --work-iters counts additions instead).",
            ),
            click.option("--work-ms", "work_ms", type=Duration(bare="ms", zero=True, high=most), hidden=True),
            click.option("--work-us", "work_us", type=Duration(bare="us", zero=True, high=most), hidden=True),
        ]
    )


def option_param(option: KindOption) -> str:
    """The click parameter a kind's option is read into (`--mutex-delay`: mutex_delay)."""
    return option.flag.lstrip("-").replace("-", "_")


def kind_options(kinds: Sequence[str] | None) -> list[Callable[[F], F]]:
    """The options only some kinds read, as those kinds declare them (servers/registry.py declared_options):
    of the command's `kinds`, or of every kind."""
    made: list[Callable[[F], F]] = []
    for option in declared_options(kinds):
        default = getattr(ServerSpec, option.field)
        kind_of: Any
        if option.choices:
            kind_of = click.Choice(option.choices)
        elif option.duration:
            kind_of, default = DURATION, f"{default:g}ms"
        else:
            kind_of = IntRange(int(option.low), int(option.high))
        made.append(click.option(option.flag, type=kind_of, default=default, show_default=True, help=option.help))
    return made


def server_options(
    workers: int | None = 3,
    accept_batch: bool = True,
    several: bool = False,
    kinds: tuple[str, ...] | None = None,
) -> Callable[[F], F]:
    """The options of every command that starts workers. `workers=None`: one per CPU by default.
    `several`: --server takes a list (compare, latency: one table across servers). `kinds`: the server
    kinds the command runs (reload: builtin); an option only other kinds read is then left out."""
    workers_help = "Worker processes." if workers is not None else "Worker processes [default: one per CPU]."
    options: list[Callable[[F], F]] = [
        server_option(several, kinds),
        click.option(
            "--workers",
            "-w",
            type=IntRange(1, MAX_WORKERS),
            default=workers,
            show_default=workers is not None,
            help=workers_help,
        ),
        click.option(
            "--host", type=HOST, default=DEFAULT_HOST, show_default=True, help="Address or name to listen on."
        ),
        click.option(
            "--port", "-p", type=IntRange(0, 65535), default=0, show_default=True, help="Port (0: ephemeral)."
        ),
        work_options(),
        click.option(
            "--work-iters",
            type=IntRange(0, MAX_WORK_ITERS),
            default=0,
            show_default=True,
            help="Loop iterations a worker counts per request, like Cloudflare's Lua loop (adds to the work).",
        ),
        click.option(
            "--backlog", type=IntRange(1, MAX_BACKLOG), default=511, show_default=True, help="listen() backlog."
        ),
        click.option("--cpus", type=CPUS, default=None, help="Pin worker i to the i-th CPU of this list, e.g. 0-1."),
        click.option("--pin", is_flag=True, help="Pin worker i to the i-th CPU this process may use (or of --cpus)."),
        *kind_options(kinds),
    ]
    if accept_batch:
        options.append(accept_batch_option())
    return apply(options)


def target_options() -> Callable[[F], F]:
    """--target HOST:PORT and --protocol, for a command that drives a server elsewhere but attaches to none
    (sweep, burst, ramp)."""
    return apply([target_option(), protocol_option(attach=False)])


def _not_ours(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A server named by --target or --attach is not this tool's to stop: said from the moment the option is
    read, so that a Ctrl-C before the run has found it (while the command still starts) does not report 'all
    workers stopped' of someone's production server (specs.attached_spec says the load's stop once it runs)."""
    if value:
        from .app import STOPPED_META  # here: app imports this module

        ctx.meta.setdefault(STOPPED_META, "the server was not touched")
    return value


def target_option() -> Callable[[F], F]:
    """--target HOST:PORT: a server elsewhere, known by its address only (attributed by its replies)."""
    return click.option(
        "--target",
        metavar="HOST:PORT",
        default=None,
        callback=_not_ours,
        help="Drive a server on another host (or network namespace), attributed by its replies only.",
    )


def protocol_option(attach: bool = True) -> Callable[[F], F]:
    """--protocol, named after the options it goes with: a command without --attach must not offer it."""
    return click.option(
        "--protocol",
        type=click.Choice(["line", "http"]),
        default="line",
        show_default=True,
        help=f"With {'--attach or ' if attach else ''}--target: what the server speaks (line: it writes and closes; "
        "http: it answers a request 'GET /' with a 200 and a body; run holds each connection open until the worker "
        "holding it is found, a load reads each reply to its end).",
    )


def attach_options(target: bool = False) -> Callable[[F], F]:
    """Drive a server that is already running instead of starting one. `target`: also one elsewhere, known
    by its address only (target_option)."""

    def pids(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...]:
        if value is None:
            return ()
        _not_ours(ctx, param, value)
        try:
            found = tuple(parse_int(p) for p in value.split(",") if p.strip())
        except ValueError:
            raise click.BadParameter(f"{value!r} is not a pid or a comma-separated list of pids") from None
        if not found or any(p <= 0 for p in found):
            raise click.BadParameter(f"{value!r} is not a pid or a comma-separated list of pids")
        return found

    return apply(
        [
            click.option(
                "--attach",
                metavar="PID[,PID...]",
                callback=pids,
                default=None,
                help="Drive a server that is already running: its master's pid (workers: its children) or its "
                "workers' pids. Needs --port; nothing is started or stopped.",
            ),
            *([target_option()] if target else []),
            protocol_option(),
        ]
    )


def json_option(
    help: str = "Write the result as JSON to this file (a regular file; never a device or symlink).",
) -> Callable[[F], F]:
    from .output import RESULT_TO_STDOUT

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None or value == RESULT_TO_STDOUT:
            return value
        from ..core.errors import PlanError
        from ..results.files import check_output_path

        try:
            check_output_path(value)
        except PlanError as exc:
            raise click.UsageError(str(exc), ctx) from None
        return value

    to_stdout = (
        f"{RESULT_TO_STDOUT}: the JSON on stdout, in place of the report (for jq); notes and errors on stderr; kept in"
        " a new file, which the error names, when stdout cannot take it all."
    )
    return click.option("--json", "json_path", metavar="FILE", callback=check, help=f"{help} {to_stdout}")


EXAMPLE_WIDTH = 78  # an example longer than this is continued on the next line, shell-style


def _wrapped(line: str) -> list[str]:
    """One example as lines of at most EXAMPLE_WIDTH: its comment on a line of its own above it, the command
    continued with a backslash (still one command when copied into a shell)."""
    command, _, comment = line.partition("  # ")
    out = [f"  # {comment.strip()}"] if comment else []
    words, current = command.split(), "  "
    for word in words:
        if current.strip() and len(current) + 1 + len(word) > EXAMPLE_WIDTH - 2:
            out.append(current + " \\")
            current = "      " + word
        else:
            current = (current + " " + word) if current.strip() else current + word
    out.append(current)
    return out


def examples(*lines: str) -> str:
    """An Examples section for a command's --help (\\b keeps click from re-wrapping it)."""
    return "\b\nExamples:\n" + "\n".join(w for line in lines for w in _wrapped(line.rstrip()))
