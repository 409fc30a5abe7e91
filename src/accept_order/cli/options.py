"""One shared option set: the same option means the same thing, with the same name, in every command.

- What serves (every command that starts workers): --mode/--modes, --workers, --host, --port,
  --work-ms/--work-us/--work-iters, --backlog, --accept-batch, --cpus, --pin.
- What drives: --connections/-n (how many connections, in every command), --timeout; sequential runs add
  --gap-ms and --no-settle; closed-loop runs add --duration, --concurrency, --driver-procs.
- --json FILE: write the result (refused before the run if the path may not be written).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..servers.modes.base import POLICIES
from ..servers.registry import DEFAULT_KIND, launched_kinds
from ..spec import (
    DEFAULT_CONCURRENCY,
    DEFAULT_DRIVER_PROCS,
    DEFAULT_HOST,
    MAX_ACCEPT_BATCH,
    MAX_BACKLOG,
    MAX_CONNECTIONS,
    MAX_DRIVER_PROCS,
    MAX_GAP_MS,
    MAX_TIMEOUT_S,
    MAX_WORK_ITERS,
    MAX_WORK_US,
    MAX_WORKERS,
)
from .types import CPUS, DURATION, HOST, MODE_LIST, SERVER_LIST, FloatRange, IntRange, parse_int

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_MODE_HELP = "How workers wait for connections (see 'accept-order modes')."


def apply(options: Sequence[Callable[[F], F]]) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def mode_option() -> Callable[[F], F]:
    from ..servers.registry import all_mode_names

    return click.option(
        "--mode",
        "-m",
        type=click.Choice(all_mode_names()),
        default=None,
        help=f"{DEFAULT_MODE_HELP} [default: epoll, or the server's first mode where it has no epoll]",
    )


def modes_option(
    default: str = "all", help: str = "Comma-separated modes, or all (see 'accept-order modes')."
) -> Callable[[F], F]:
    return click.option("--modes", "modes", type=MODE_LIST, default=default, show_default=True, help=help)


def server_options(workers: int | None = 3, accept_batch: bool = True, several: bool = False) -> Callable[[F], F]:
    """The options of every command that starts workers. `workers=None`: one per CPU by default.
    `several`: --server takes a list (compare, latency: one table across servers)."""
    workers_help = "Worker processes." if workers is not None else "Worker processes [default: one per CPU]."
    # The kinds are the registry's: a kind added there is named here without an edit.
    others = [name for name in launched_kinds() if name != DEFAULT_KIND]
    server_help = (
        f"What serves: {DEFAULT_KIND} (this tool's Python workers), or a real server launched from a generated "
        f"config: {', '.join(others)} (see 'accept-order modes')"
        + ("; several, comma-separated, share one table." if several else ".")
    )
    # Where several servers share a table, --servers is the same option (wenfh2020's burst table says it so).
    names = ("--server", "--servers", "server") if several else ("--server",)
    options: list[Callable[[F], F]] = [
        click.option(
            *names,
            type=SERVER_LIST if several else click.Choice(launched_kinds()),
            default="builtin",
            show_default=True,
            help=server_help,
        ),
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
        click.option(
            "--work-ms",
            type=FloatRange(0, MAX_WORK_US / 1000),
            default=None,
            help="CPU a worker burns per connection before it answers, in ms (a busy loop, not a sleep).",
        ),
        click.option(
            "--work-us",
            type=IntRange(0, MAX_WORK_US),
            default=None,
            help="The same in microseconds (give one of --work-ms and --work-us).",
        ),
        click.option(
            "--work-iters",
            type=IntRange(0, MAX_WORK_ITERS),
            default=0,
            show_default=True,
            help="Loop iterations a worker counts per connection, like Cloudflare's Lua loop (adds to the work).",
        ),
        click.option(
            "--backlog", type=IntRange(1, MAX_BACKLOG), default=511, show_default=True, help="listen() backlog."
        ),
        click.option("--cpus", type=CPUS, default=None, help="Pin worker i to the i-th CPU of this list, e.g. 0-1."),
        click.option("--pin", is_flag=True, help="Pin worker i to the i-th CPU this process may use (or of --cpus)."),
        click.option(
            "--policy",
            type=click.Choice(POLICIES),
            default=POLICIES[0],
            show_default=True,
            help="fd-pass: which worker the acceptor hands each connection to.",
        ),
        click.option(
            "--mutex-delay",
            type=DURATION,
            default="500ms",
            show_default=True,
            help="accept-mutex: how long a worker without the lock waits before trying again "
            "(nginx's accept_mutex_delay).",
        ),
        click.option(
            "--maxconn",
            type=IntRange(0, 10_000_000),
            default=0,
            help="haproxy: connections it holds at once; the excess waits in the listen queue (0: its default).",
        ),
    ]
    if accept_batch:
        options.append(
            click.option(
                "--accept-batch",
                type=IntRange(0, MAX_ACCEPT_BATCH),
                default=None,
                help="Most connections accepted per wakeup (0: until EAGAIN) [default: the server's own: 0 for "
                "builtin, 1 for nginx, whose multi_accept is off unless this is 0].",
            )
        )
    return apply(options)


def attach_options() -> Callable[[F], F]:
    """Drive a server that is already running instead of starting one."""

    def pids(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...]:
        if value is None:
            return ()
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
            click.option(
                "--target",
                metavar="HOST:PORT",
                default=None,
                help="Drive a server on another host (or network namespace), attributed by its replies only "
                "(run only).",
            ),
            click.option(
                "--protocol",
                type=click.Choice(["line", "http"]),
                default="line",
                show_default=True,
                help="With --attach: what the server speaks (line: it writes and closes; http: a keep-alive "
                "request, the connection held open until the worker holding it is found).",
            ),
        ]
    )


def timeout_option(default: float, what: str) -> Callable[[F], F]:
    return click.option(
        "--timeout",
        "timeout_s",
        type=FloatRange(0.001, MAX_TIMEOUT_S),
        default=default,
        show_default=True,
        help=f"Seconds a {what} may take before it counts as failed.",
    )


def sequential_options(connections: int = 6, pacing: bool = True) -> Callable[[F], F]:
    """`pacing=False` (herd) leaves out --gap-ms and --no-settle: that command needs both off."""
    options: list[Callable[[F], F]] = [
        click.option(
            "--connections",
            "-n",
            type=IntRange(1, MAX_CONNECTIONS),
            default=connections,
            show_default=True,
            help="Connections to drive, one after the other.",
        ),
        click.option(
            "--gap-ms",
            type=FloatRange(0, MAX_GAP_MS),
            default=0.0,
            show_default=True,
            help="Start connection k at k*gap (0: each when the previous one has finished).",
        ),
        timeout_option(5.0, "connection"),
        click.option(
            "--no-settle", is_flag=True, help="Do not wait for idle workers to be asleep before each connection."
        ),
    ]
    return apply(options if pacing else [options[0], options[2]])


def load_cpus_option() -> Callable[[F], F]:
    """Every command that drives a load with the load generator's processes (latency, sweep, burst, ramp,
    reload)."""
    return click.option(
        "--load-cpus",
        type=CPUS,
        default=None,
        help="Pin the load generator's processes to these CPUs, e.g. 1 (off the workers' --cpus; refused if "
        "they overlap).",
    )


def load_options(rate: bool = False) -> Callable[[F], F]:
    """`rate`: the command also runs an open loop (--rate), where -c is the most connections in flight."""
    from ..spec import DEFAULT_REQUESTS

    concurrency_help = "Connections in flight: each ends (connect, read reply, close) and the next starts at once."
    if rate:
        concurrency_help += (
            " With --rate: the most in flight; a connection due while all are busy starts when one ends, "
            "and its latency still counts from when it was due."
        )
    open_loop = [
        click.option(
            "--rate",
            type=FloatRange(0.001, 10_000_000),
            default=None,
            help="Open loop: start this many connections per second on a fixed schedule, whatever is in flight, "
            "each timed from when it was due (as wrk2 does) [default: closed loop].",
        )
    ]
    return apply(
        [
            click.option(
                "--connections",
                "-n",
                "connections",
                type=IntRange(1, MAX_CONNECTIONS),
                default=None,
                help=f"Connections to finish, each one request (default {DEFAULT_REQUESTS}; not with --duration).",
            ),
            # v0.1 called them requests; kept so old command lines still work.
            click.option("--requests", "requests_alias", type=IntRange(1, MAX_CONNECTIONS), default=None, hidden=True),
            click.option(
                "--duration",
                "duration_s",
                type=DURATION,
                default=None,
                help="Run for this long instead: 10s, 500ms, 2m.",
            ),
            click.option(
                "--concurrency",
                "-c",
                type=IntRange(1, None),
                default=DEFAULT_CONCURRENCY,
                show_default=True,
                help=concurrency_help,
            ),
            click.option(
                "--driver-procs",
                type=IntRange(1, MAX_DRIVER_PROCS),
                default=DEFAULT_DRIVER_PROCS,
                show_default=True,
                help="Load generator processes sharing the concurrency.",
            ),
            timeout_option(10.0, "connection"),
            load_cpus_option(),
            *(open_loop if rate else []),
        ]
    )


def json_option(
    help: str = "Write the result as JSON to this file (a regular file; never a device or symlink).",
) -> Callable[[F], F]:
    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        from ..errors import PlanError
        from ..results.files import check_output_path

        try:
            check_output_path(value)
        except PlanError as exc:
            raise click.UsageError(str(exc), ctx) from None
        return value

    return click.option("--json", "json_path", metavar="FILE", callback=check, help=help)


def examples(*lines: str) -> str:
    """An Examples section for a command's --help (\\b keeps click from re-wrapping it)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)
