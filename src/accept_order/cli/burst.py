"""`accept-order burst`: N clients at once, per server and mode; how long until every one was served."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

import click

from ..core.cpus import format_cpu_list
from ..core.spec import DEFAULT_DRIVER_PROCS, MAX_CONNECTIONS, MAX_DRIVER_PROCS, Driver
from .app import handle_errors
from .common import host_warnings, keep_partial, report_and_save
from .hosts_lost import end_if_unmeasured
from .load_options import BURST_COUNTS, ClientCounts, client_hosts, clients_options, driver_option, driver_procs_help
from .options import (
    examples,
    json_option,
    load_cpus_option,
    modes_option,
    server_options,
    target_options,
    timeout_option,
)
from .output import progress_bar
from .progress import RunProgress
from .repeat_common import repeat_option, run_repeated
from .served_nothing import Tally, of_parts
from .specs import first_available, given_kind_options, load_cpus, loop_here, refuse_for_target, server_spec
from .types import IntRange


@click.command(
    epilog=examples(
        "accept-order burst                                   # 1000, 3000, 5000 clients at the epoll workers",
        "accept-order burst --server builtin,nginx --modes epoll-herd,accept-mutex,epoll,reuseport -w 4",
        "accept-order burst --clients 1000,10000,25000 --json burst.json",
        "accept-order burst --modes epoll,reuseport --repeat 5                # which is fastest in how many runs?",
        "accept-order burst --clients 200,1000 --requests-per-connection 20   # clients × 20 requests, ≤ 20 each",
        "accept-order burst --target 192.0.2.1:8080 -w 4 --clients 1000,5000     # a server elsewhere",
    )
)
@modes_option(
    default="default",
    help="Comma-separated modes (each a column), all, or default: each server's own (epoll where it has one).",
)
@server_options(workers=4, several=True)
@target_options()
@click.option(
    "--clients",
    type=ClientCounts(1, 1_000_000),
    default="1000,3000,5000",
    show_default=True,
    help="Client counts, each one burst: that many connections opened at once.",
)
@click.option(
    "--driver-procs",
    type=IntRange(1, MAX_DRIVER_PROCS),
    default=DEFAULT_DRIVER_PROCS,
    show_default=True,
    help=driver_procs_help("Load generator processes the connections of a burst are split over"),
)
@driver_option()
@timeout_option("10s", "connection", kept=True)
@load_cpus_option()
@clients_options(counts_taken=True, counts=BURST_COUNTS)
# A burst of K-request connections means something (the clients' connections, opened all at once, carry up to
# K requests each to the worker that accepted them: how long until the busiest worker has answered all it
# holds); a connection kept for the whole run (0) and a pool (connections opened one after another at idle) do
# not: a burst ends when every client has its answers, and opens its connections all at once. The load counts
# requests, not connections per client (loads/kept.py): a driver's clients × K requests are shared among its
# connections, so one whose K were answered first opens another while requests are left (500 clients × 10
# drove 595 to 608 connections here), and the help says so.
@click.option(
    "--requests-per-connection",
    "requests_per_connection",
    type=IntRange(0, MAX_CONNECTIONS),
    default=1,
    show_default=True,
    help="K: the burst sends clients × K requests over connections opened all at once, one per client, each "
    "carrying at most K, one after another, before the client closes it (1: connect, reply, close). The requests "
    "are shared: a connection whose K were answered while requests were still to go is followed by a new one, so "
    "a burst may open more connections than clients, and then some carry fewer than K (the report counts "
    "them). Not 0: a burst ends when every client has its answers, and a connection kept for the whole run has no "
    "end of its own.",
)
@click.option("--pool", is_flag=True, hidden=True)  # refused with why (a pool opens one at a time, a burst at once)
@repeat_option(variants="modes and servers")
@json_option()
@handle_errors
def burst(
    modes: list[str],
    clients: list[int],
    driver_procs: int,
    driver: Driver,
    timeout_s: float,
    requests_per_connection: int,
    pool: bool,
    repeat: int,
    json_path: str | None,
    **options: Any,
) -> None:
    """Connect N clients at once: how long until all are served. This is wenfh2020's burst table, per
    server and mode."""
    from ..api import burst as run_bursts
    from ..core.spec import ConcurrentLoad
    from ..experiments.burst.experiment import report as burst_report  # the table, and what a stop cut
    from ..experiments.burst.result import BurstResult
    from ..experiments.burst.run import BurstPlan, make_room
    from ..servers.registry import refuse_closing, variants

    if pool:
        raise click.UsageError(
            "burst takes no --pool: a pool opens its connections one after another at idle, a burst opens them "
            "all at once (ramp --pool and latency --pool run requests over a pool)"
        )
    refuse_for_target(options, repeat)
    elsewhere = options.get("target") is not None
    servers: list[str] = options["server"]
    batch_given = options.get("accept_batch") is not None
    base = server_spec(options, mode=None if elsewhere else first_available(modes, servers), varied=not elsewhere)
    servers = [base.kind] if elsewhere else servers
    hosts = client_hosts(options, base, "--client-hosts")
    plan = BurstPlan(
        tuple(clients), driver_procs, timeout_s, load_cpus(options, base, hosts), requests_per_connection, hosts, driver
    ).validated()
    refuse_closing(servers, ConcurrentLoad(requests_per_connection=requests_per_connection))  # before any starts
    loop_here(plan.load(min(clients)))
    specs, skipped = ([base], {}) if elsewhere else variants(base, modes, servers, batch_given, given_kind_options())
    # before any process starts (they inherit it); nothing here holds a connection when hosts drive a server elsewhere
    room = None if elsewhere and hosts is not None else make_room(max(clients), driver_procs, hosts is not None)
    notes = [room] if room else []
    if plan.load_cpus:  # the file keeps no load of its own: said where it is kept
        notes.append(f"the load generator's processes were pinned to CPUs {format_cpu_list(plan.load_cpus)}")
    host_warnings()
    # run_repeated counts every run of every round; one round counts its bursts here (on_burst)
    # a burst takes longer the more clients it has: the estimate weighs each by its size (smallest first)
    bursts = len(specs) * len(plan.clients)
    rounds = RunProgress(bursts, sizes=sorted(plan.clients)) if repeat == 1 else RunProgress(repeat)

    def save(runs: Sequence[Any], interrupted: bool = False, stopped: str | None = None) -> None:
        result = BurstResult(tuple(runs), skipped, tuple(notes), interrupted, stopped)
        report_and_save(lambda: burst_report(result), json_path, "burst", result)

    with ExitStack() as bars:

        def on_burst(spec: Any, n: int) -> Any:
            bars.close()
            if repeat == 1:
                rounds.next()
            said = rounds.live(f"{spec.label}: {n} clients")
            # with K requests per connection the load counts the clients' K requests each: '9,503 of 200 connections'
            load = plan.load(n)
            bar = progress_bar(said, load.connections, timeout_s=plan.timeout_s, ticks=True)
            unit = "requests" if load.keeps_connections else "connections"
            return rounds.ticking(bars.enter_context(bar), load.connections, unit)  # the heartbeat says how far

        if repeat > 1:

            def one(spec: Any) -> Any:
                return run_bursts([spec], plan, on_burst)[0]

            run_repeated("burst", specs, repeat, one, skipped, json_path, rounds, notes, tally=burst_tally)
            return
        # an error after a burst (a client host lost, a driver that could not start): the bursts so far, saved
        stopped = keep_partial(lambda runs: save(runs, interrupted=True), lambda runs, why: save(runs, stopped=why))
        with stopped, rounds.heartbeat():
            runs = run_bursts(specs, plan, on_burst)
    save(runs)
    each = [(f"{run.server.label}'s burst of {cell.clients}", cell) for run in runs for cell in run.cells]
    # a server whose every burst served nothing (an HTTPS port: nginx 400, HAProxy closes): why, and exit 1
    end_if_unmeasured([burst_tally(run) for run in runs], runs, json_path, each)


def burst_tally(run: Any) -> Tally:
    """A server's bursts together: one burst that served none beside others that served is a burst, not a failure."""
    return of_parts(run.server, run.cells)
