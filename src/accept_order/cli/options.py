"""One shared option set: the same option means the same thing, with the same name, in every command.

- What serves (every command that starts workers): --mode/--modes, --server, --workers, --host, --port,
  --work/--work-iters, --backlog, --accept-batch, --cpus, --pin.
- What drives: --connections/-n (how many connections, in every command), --timeout; sequential runs add
  --gap and --no-settle; closed-loop runs add --duration, --concurrency, --driver-procs.
- --json FILE: write the result (refused before the run if the path may not be written).

Each command declares only the options it accepts (reload has no -n, only run has --target): its --help
shows what it takes, with the defaults it uses. Durations take a unit everywhere (2s, 500ms, 2m); a bare
number keeps the option's unit from before units (seconds, but ms for --work and --gap). Old spellings
(--work-ms, --work-us, --gap-ms, --servers) are accepted, not shown.
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
from .types import (
    CPUS,
    DURATION,
    HOST,
    MODE_LIST,
    AliasOption,
    Duration,
    FloatRange,
    IntList,
    IntRange,
    ServerList,
    parse_int,
)

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
        metavar="MODE",  # the choices of every server, 29 of them, made one 289-column help line
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
        help=server_help,
    )


def accept_batch_option(several: bool = False) -> Callable[[F], F]:
    """--accept-batch: one value, or (sweep) a list of them, one run each; the same parser and errors."""
    if several:
        return click.option(
            "--accept-batch",
            "batches",
            type=IntList(0, MAX_ACCEPT_BATCH),
            default="1,4,32,0",
            show_default=True,
            help="Caps on connections accepted per wakeup to try, one run each (0: until EAGAIN).",
        )
    return click.option(
        "--accept-batch",
        type=IntList(0, MAX_ACCEPT_BATCH, several=False),
        default=None,
        help="Most connections accepted per wakeup (0: until EAGAIN) [default: the server's own: 0 for "
        "builtin, 1 for nginx, whose multi_accept is off unless this is 0].",
    )


def work_options() -> Callable[[F], F]:
    """--work 1ms; --work-ms and --work-us, its old spellings, still parse (a bare number in their unit)."""
    most = MAX_WORK_US / 1e6
    return apply(
        [
            click.option(
                "--work",
                "work_s",
                type=Duration(bare="ms", zero=True, high=most),
                default="0ms",
                show_default=True,
                help="CPU a worker burns per connection before it answers, e.g. 1ms or 200us (a busy loop, not a "
                "sleep; a bare number is in ms).",
            ),
            click.option("--work-ms", "work_ms", type=Duration(bare="ms", zero=True, high=most), hidden=True),
            click.option("--work-us", "work_us", type=Duration(bare="us", zero=True, high=most), hidden=True),
        ]
    )


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
    ]
    if kinds is None or "haproxy" in kinds:
        options.append(
            click.option(
                "--maxconn",
                type=IntRange(0, 10_000_000),
                default=0,
                show_default=True,
                help="haproxy: connections it holds at once; the excess waits in the listen queue (0: its default).",
            )
        )
    if accept_batch:
        options.append(accept_batch_option())
    return apply(options)


def attach_options(target: bool = False) -> Callable[[F], F]:
    """Drive a server that is already running instead of starting one. `target`: also one elsewhere, known
    by its address only (run: a load's client processes cannot share what they learn from the replies)."""

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

    elsewhere = [
        click.option(
            "--target",
            metavar="HOST:PORT",
            default=None,
            help="Drive a server on another host (or network namespace), attributed by its replies only.",
        )
    ]
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
            *(elsewhere if target else []),
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


def timeout_option(default: str, what: str) -> Callable[[F], F]:
    return click.option(
        "--timeout",
        "timeout_s",
        type=Duration(low=0.001, high=MAX_TIMEOUT_S),
        default=default,
        show_default=True,
        help=f"How long a {what} may take before it counts as failed, e.g. 5s or 500ms (a bare number is in s).",
    )


def sequential_options(connections: int = 6, pacing: bool = True) -> Callable[[F], F]:
    """`pacing=False` (herd) leaves out --gap and --no-settle: that command needs both off."""
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
            "--gap",
            "gap_s",
            type=Duration(bare="ms", zero=True, high=MAX_GAP_MS / 1000),
            default="0ms",
            show_default=True,
            help="Start connection k at k*gap, e.g. 50ms (0: each when the previous one has finished; a bare "
            "number is in ms).",
        ),
        timeout_option("5s", "connection"),
        click.option(
            "--no-settle", is_flag=True, help="Do not wait for idle workers to be asleep before each connection."
        ),
        # --gap's old spelling: a number of ms
        click.option("--gap-ms", "gap_ms", type=Duration(bare="ms", zero=True, high=MAX_GAP_MS / 1000), hidden=True),
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


def load_options(rate: bool = False, count: bool = True, duration: str | None = None) -> Callable[[F], F]:
    """`rate`: the command also runs an open loop (--rate), where -c is the most connections in flight.
    `count=False`: the load runs for a --duration only (reload: its worker goes part-way through), whose
    default is then `duration`."""
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
    by_count = [
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
    ]
    return apply(
        [
            *(by_count if count else []),
            click.option(
                "--duration",
                "duration_s",
                type=DURATION,
                default=duration,
                show_default=duration is not None,
                help="Run for this long instead: 10s, 500ms, 2m (a bare number is in s)."
                if count
                else "How long the load runs: 10s, 500ms, 2m (a bare number is in s).",
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
            timeout_option("10s", "connection"),
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
