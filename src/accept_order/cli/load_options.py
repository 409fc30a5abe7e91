"""The options of the load a command drives: sequential connections (run, compare, herd, serve's tests),
or the load generator's (latency, sweep, burst, ramp, reload): how many, how long, how many in flight,
its timeout, its CPUs, an open loop's rate, the client hosts it runs on (--clients). Declared per command
like the rest (cli/options.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..core.errors import PlanError
from ..core.spec import (
    DEFAULT_CONCURRENCY,
    DEFAULT_DRIVER_PROCS,
    DRIVERS,
    MAX_CONNECTIONS,
    MAX_DRIVER_PROCS,
    MAX_GAP_MS,
    MAX_TIMEOUT_S,
    ServerSpec,
)

if TYPE_CHECKING:  # imported where --clients is given: not by `run` (issue 30: start-up)
    from ..core.hosts import ClientHosts

from .types import CPUS, DURATION, Duration, FloatRange, IntList, IntRange, parse_int

F = TypeVar("F", bound=Callable[..., Any])


def apply(options: Sequence[Callable[[F], F]]) -> Callable[[F], F]:
    """Several click options as one decorator, in the order given (the order --help lists them)."""

    def decorate(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def timeout_option(default: str, what: str, kept: bool = False) -> Callable[[F], F]:
    """`kept`: the load can keep its connections, where the clock restarts at each request's send (loads/kept.py):
    one kept for the whole run outlives any --timeout, and only a request that waits too long for its reply fails."""
    return click.option(
        "--timeout",
        "timeout_s",
        type=Duration(low=0.001, high=MAX_TIMEOUT_S),
        default=default,
        show_default=True,
        help="How long a request may take before it counts as failed: from its connection's connect to its reply, or "
        "over a kept connection (--requests-per-connection) from each request's send; e.g. 5s or 500ms."
        if kept
        else f"How long a {what} may take before it counts as failed, e.g. 5s or 500ms.",
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
            type=Duration(zero=True, high=MAX_GAP_MS / 1000, was="ms"),
            default="0ms",
            show_default=True,
            help="Start connection k at k*gap, e.g. 50ms (0: each when the previous one has finished).",
        ),
        timeout_option("5s", "connection"),
        click.option(
            "--no-settle", is_flag=True, help="Do not wait for idle workers to be asleep before each connection."
        ),
        # --gap's old spelling, which names its unit: a bare number of ms
        click.option("--gap-ms", "gap_ms", type=Duration(bare="ms", zero=True, high=MAX_GAP_MS / 1000), hidden=True),
        driver_option(
            "The client's loop: one connection at a time runs a poll loop (auto and epoll); io_uring, which "
            "batches many connections' calls, is refused here (it measured slower one at a time)",
            sequential=True,
        ),
    ]
    return apply(options if pacing else [options[0], options[2], options[-1]])


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


# Where a count given for client hosts goes, by the command's own options: ramp has no -c (its steps set the
# load) and burst's size is its own --clients ('ramp --clients 4,8' was pointed at -c, which ramp refuses).
LATENCY_COUNTS = "the connections in flight are -c, and a burst's size is burst's --clients"
RAMP_COUNTS = "a step's connections in flight are --concurrency-steps, or --in-flight with --rates"
BURST_COUNTS = "a burst's size is --clients"


class Destinations(click.ParamType):
    """`c1,user@c2,alias`: ssh destinations, as the user's own ssh takes them (each checked by ClientHosts).
    `counts`: where this command's counts go, said to a count given here (latency's -c is not ramp's nor burst's)."""

    name = "DEST[,DEST...]"

    def __init__(self, counts: str = LATENCY_COUNTS) -> None:
        self.counts = counts

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[str]:
        if isinstance(value, list):
            return value
        dests = [d.strip() for d in str(value).split(",") if d.strip()]
        if not dests:
            self.fail(f"{value!r} names no host: give ssh destinations such as c1,c2 or user@host", param, ctx)
        if all(_whole(d) for d in dests):  # 'latency --clients 1000', as burst's --clients counts connections
            numbers = "a number" if len(dests) == 1 else "numbers"
            self.fail(
                f"{value!r} is {numbers}, not hosts: this option names the hosts to drive the load from, reached "
                f"with your ssh (such as c1,c2 or user@host); {self.counts}",
                param,
                ctx,
            )
        return dests


class ClientCounts(IntList):
    """burst's --clients (connections opened at once): its refusal of a word says where client hosts go. Only of a
    word: '5,5: value(s) given more than once: 5 (client hosts to drive the bursts from: --client-hosts)' pointed a
    count given twice at the hosts' option."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            if all(_whole(v) for v in str(value).split(",")):
                raise
            self.fail(f"{exc.message} (client hosts to drive the bursts from: --client-hosts)", param, ctx)


def _whole(text: str) -> bool:
    """Whether `text` is a whole number, as IntList reads one, or nothing (an empty place in the list)."""
    try:
        parse_int(text.strip()) if text.strip() else None
    except ValueError:
        return False
    return True


def _existing_file(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--ssh-config: a file that is there to read (ssh would fail on each host, later and less clearly)."""
    import os

    if value is not None and not os.path.isfile(value):
        missing = "is not a file" if os.path.exists(value) else "does not exist"
        raise click.BadParameter(f"{value!r} {missing}", ctx, param)
    if value is not None and not os.access(value, os.R_OK):
        raise click.BadParameter(f"{value!r} cannot be read", ctx, param)
    return value


def clients_options(counts_taken: bool = False, counts: str = LATENCY_COUNTS) -> Callable[[F], F]:
    """--clients DEST,... (the load generator runs on those hosts, reached over ssh), --ssh-config and
    --client-python: latency, sweep, burst, ramp. `counts_taken`: the command's --clients counts
    connections (burst); the hosts are then --client-hosts only (every command takes that name too). `counts`:
    where the command's counts go (Destinations)."""
    names = ("--client-hosts",) if counts_taken else ("--clients", "--client-hosts")
    hosts = names[0]  # how the help names the hosts' option: never burst's --clients, which counts connections
    return apply(
        [
            click.option(
                *names,
                "client_hosts",
                type=Destinations(counts),
                default=None,
                help="Run the load generator on these hosts, reached with your ssh (host, user@host, an alias of "
                "~/.ssh/config), the load split across them; this host coordinates. Each needs the same "
                "accept-order; the workers must listen where they can reach them (--host ADDRESS, or --target).",
            ),
            click.option(
                "--ssh-config",
                metavar="FILE",
                default=None,
                callback=_existing_file,
                help=f"With {hosts}: ssh's config file to reach them with (ssh -F).",
            ),
            click.option(
                "--client-python",
                metavar="PATH",
                default=None,
                help=f"With {hosts}: the Python with accept-order on the client hosts [default: this one's path "
                "where it exists there, else python3].",
            ),
            click.option(
                "--observe-on",
                metavar="DEST",
                default=None,
                help=f"Run observe on the server's host (an ssh destination, as {hosts}) for the load's window, "
                "and set its per-worker accepts, CPU and load beside the load's own counts.",
            ),
        ]
    )


def client_hosts(options: dict[str, Any], server: ServerSpec | None, option: str = "--clients") -> ClientHosts | None:
    """Pops --clients (or --client-hosts), --ssh-config and --client-python: the hosts the load generator runs
    on, or None (here). The server must be where they can reach it: not on a loopback address (each host
    would reach its own), nor on every address at once (they need one to connect to). `option`: how the
    command's lines name the hosts (burst: --client-hosts, its --clients counting connections)."""
    from ..core.hosts import ClientHosts

    dests, config, python, observe_on = (
        options.pop(name, None) for name in ("client_hosts", "ssh_config", "client_python", "observe_on")
    )
    if dests is None and observe_on is None:
        given = [name for name, value in (("--ssh-config", config), ("--client-python", python)) if value is not None]
        if given:
            raise click.UsageError(f"{given[0]} goes with {option} or --observe-on (the hosts to reach)")
        return None
    try:
        hosts = ClientHosts(tuple(dests or ()), config, python, observe_on).validated(option)
    except PlanError as exc:
        raise click.UsageError(str(exc)) from None
    if dests is not None:
        _reachable_on_purpose()
    if server is None or dests is None:
        return hosts  # observed elsewhere, driven from here: wherever the server listens, this host reaches it
    import ipaddress

    from ..servers.remote import RemoteKind

    try:
        address = ipaddress.ip_address(server.host)
    except ValueError:
        return hosts  # a name: the client hosts resolve it their own way
    if server.kind == RemoteKind.name and (address.is_loopback or address.is_unspecified):
        raise click.UsageError(
            f"--target {server.host} is this host's own address to each client host: give the server's address "
            "as the client hosts reach it"
        )
    if address.is_loopback or address.is_unspecified:
        where = "only this host reaches" if address.is_loopback else "is no one address to connect to"
        raise click.UsageError(
            f"{option}: the workers listen on {server.host}, which {where}: give --host ADDRESS (an address of "
            "this host the client hosts can reach)"
        )
    return hosts


def _reachable_on_purpose() -> None:
    """Drop the warning that the workers listen where others can reach them (--host): with --clients, that
    is what the user asked for (the client hosts must reach them), not an oversight to point out."""
    from ..core.run_warnings import WarningKind

    ctx = click.get_current_context(silent=True)
    if ctx is not None and "accept_order.warnings" in ctx.meta:
        said = ctx.meta["accept_order.warnings"]
        said[:] = [w for w in said if getattr(w, "kind", None) != WarningKind.REACHABLE_HOST]


def driver_procs_help(what: str, hosts: bool = True) -> str:
    """--driver-procs' help; `hosts`: the command takes --clients (reload does not)."""
    return f"{what} (per client host with --clients)." if hosts else f"{what}."


def driver_option(what: str = "", sequential: bool = False) -> Callable[[F], F]:
    """--driver: the client's loop (loads/drivers.py), on every command that connects; `what` (with
    `sequential`) says it for the one-connection-at-a-time client."""
    return click.option(
        "--driver",
        type=click.Choice(DRIVERS, case_sensitive=False),
        default="auto",
        show_default=True,
        help=f"{what}."
        if sequential
        else "The load generator's loop: io_uring batches system calls (Linux 5.19+, PyPI's uring-api), epoll is "
        "the fallback; auto takes io_uring where it can run (each client host decides for itself). Kept "
        "connections run on epoll. The report says which ran.",
    )


def kept_options(pool: bool = True, rate: bool = False) -> Callable[[F], F]:
    """How many requests each connection carries, and (`pool`) the pool shape: every command that drives
    the load generator (latency, sweep, reload, ramp, burst; burst's connections all open at once, so no pool).
    `rate`: the command has --rate, which then counts requests too (as ramp's --rates says)."""
    counted = "--connections and --rate count requests" if rate else "--connections counts requests"
    options: list[Callable[[F], F]] = [
        click.option(
            "--requests-per-connection",
            "requests_per_connection",
            type=IntRange(0, MAX_CONNECTIONS),
            default=1,
            show_default=True,
            help="Requests over each connection before the client closes it: 1 (connect, reply, close), K > 1, "
            f"or 0: the connection lives for the whole run. Not 1: {counted}, and each request's time (sent to "
            "reply) is one sample.",
        )
    ]
    if pool:
        options.append(
            click.option(
                "--pool",
                is_flag=True,
                help="Open the -c connections one after another at idle first (each once its first reply names "
                "its worker, as a proxy fills its pool), then run the requests over them.",
            )
        )
    return apply(options)


def load_options(
    rate: bool = False, count: bool = True, duration: str | None = None, kept: bool = True, hosts: bool = True
) -> Callable[[F], F]:
    """`rate`: the command also runs an open loop (--rate), where -c is the most connections in flight.
    `count=False`: the load runs for a --duration only (reload: its worker goes part-way through), whose
    default is then `duration`. `kept=False`: no --requests-per-connection nor --pool (reload: what a leaving
    worker does with the connections it keeps is a question of its own, not answered yet). `hosts=False`:
    no --clients (reload: when its worker leaves is timed on this host)."""
    from ..core.spec import DEFAULT_REQUESTS

    concurrency_help = "Connections in flight: each ends (connect, read reply, close) and the next starts at once."
    if count:  # each connection opens with one of -n's: no more can be open at once (ConcurrentLoad)
        concurrency_help += " At most --connections: -n 20 runs 20 at once, whatever -c says."
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
                help="Run for this long instead: 10s, 500ms, 2m."
                if count
                else "How long the load runs: 10s, 500ms, 2m.",
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
                help=driver_procs_help("Load generator processes sharing the concurrency", hosts),
            ),
            driver_option(),
            timeout_option("10s", "connection", kept=kept),
            load_cpus_option(),
            *(open_loop if rate else []),
            *([kept_options(rate=rate)] if kept else []),
            *([clients_options()] if hosts else []),
        ]
    )
