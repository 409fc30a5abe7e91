"""`accept-order latency`: CPU-bound workers under a closed-loop load (or an open loop: --rate),
mmhistogram-style histograms."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import click

from ..core.spec import ServerSpec
from .app import handle_errors
from .common import host_warnings, keep_partial, report_and_save
from .hosts_lost import end_if_unmeasured
from .options import attach_options, examples, json_option, load_options, mode_option, server_options
from .output import note, progress_bar
from .progress import RunProgress
from .repeat_common import repeat_option, run_repeated
from .served_nothing import of_totals
from .specs import concurrent_load, first_available, given_kind_options, refuse_for_target, server_spec
from .types import MODE_LIST

if TYPE_CHECKING:  # made where a load is parsed (cli/specs.py): --help reads this module without it
    from ..core.concurrent_load import ConcurrentLoad

Tick = Callable[[int, float], None]


def counted(load: ConcurrentLoad) -> str:
    """What a run's ticks count: its requests where connections are kept (a pool of 4 connections ticked 326,919,
    its requests, which the heartbeat called connections), else its connections."""
    return "requests" if load.keeps_connections else "connections"


@contextmanager
def bars(
    load: ConcurrentLoad, label: Callable[[ServerSpec], str], runs: RunProgress | None = None, count: bool = False
) -> Iterator[Callable[[ServerSpec], Tick]]:
    """A fresh progress bar for each run of a comparison or sweep (a no-op off a terminal), labelled with
    which run of `runs` it is; `count`: each run is one more of them (a --repeat counts its own)."""
    runs = runs or RunProgress(1)
    with ExitStack() as stack, runs.heartbeat() if count else nullcontext():

        def on_run(spec: ServerSpec) -> Tick:
            stack.close()
            if count:
                runs.next()
            by_count = load.connections is not None
            total = load.connections if by_count else load.duration_s
            unit = counted(load)
            bar = progress_bar(runs.live(label(spec)), total, by_count, timeout_s=load.timeout_s, ticks=True, unit=unit)
            # off a terminal, the heartbeat says how far it has got (runs.status)
            return runs.ticking(stack.enter_context(bar), total if by_count else None, unit)

        yield on_run


@click.command(
    epilog=examples(
        "accept-order latency -n 20000 -c 32 --work 1ms --pin",
        "accept-order latency --modes epoll,reuseport --work-iters 1000000 --pin   # Cloudflare's test",
        "accept-order latency --duration 10s --json latency.json",
        "accept-order latency --modes epoll,reuseport --rate 400 --duration 10s -c 200 --work 2ms --pin  # open loop",
        "accept-order latency --modes blocking,reuseport -n 20000 -c 32 --work 1ms --pin --repeat 5",
        "accept-order latency --attach $(cat /run/nginx.pid) --port 80 --protocol http -n 20000 -c 50",
        "accept-order latency --target 192.0.2.1:8080 --protocol http -w 4 -n 20000 -c 50  # a server elsewhere",
    )
)
@mode_option()
@click.option("--modes", "modes", type=MODE_LIST, default=None, help="Several modes, one run each, same settings.")
@click.option("--compare", "modes_alias", type=MODE_LIST, default=None, hidden=True)  # v0.1's name for --modes
@server_options(workers=None, several=True)
@attach_options(target=True)
@load_options(rate=True)
@click.option("--title", default=None, help="Histogram title (default: 'Duration in ms (MODE)').")
@repeat_option(variants="modes and servers", given_by="--modes or several --server")
@json_option()
@handle_errors
def latency(
    mode: str | None,
    modes: list[str] | None,
    modes_alias: list[str] | None,
    title: str | None,
    repeat: int,
    json_path: str | None,
    **options: Any,
) -> None:
    """Measure latency under load, as an mmhistogram-style histogram. The workers are CPU-bound, the load
    a closed loop (or an open loop with --rate)."""
    from .. import api
    from ..experiments.latency.experiment import latency_compare_report
    from ..experiments.latency.report import latency_report
    from ..experiments.latency.result import LatencyCompareResult
    from ..servers.held_whole_run import refuse_unanswered
    from ..servers.registry import refuse_closing, server_kind, variants

    if modes is not None and modes_alias is not None:
        raise click.UsageError("give --modes only (--compare is its old name)")
    modes = modes if modes is not None else modes_alias
    if mode is not None and modes is not None:
        raise click.UsageError("give --mode for one run or --modes for several, not both")
    if options.get("attach") and modes is not None:
        raise click.UsageError("--attach drives one running server: not with --modes")
    refuse_for_target(options, repeat)
    servers: list[str] = options["server"]
    batch_given = options.get("accept_batch") is not None
    if len(servers) > 1 and modes is None:
        modes = [mode or "default"]  # several servers: --mode (or each one's own default) on each of them
    server = server_spec(
        options, mode=mode or (first_available(modes, servers) if modes else None), varied=modes is not None
    )
    load = concurrent_load(options, server)
    refuse_closing([server.kind, *servers], load)  # every server named, before any run starts
    host_warnings()
    if repeat > 1:
        if options.get("attach") or not server_kind(server.kind).launched:
            raise click.UsageError("--repeat starts the server for every run: not with --attach or --target")
        specs, skipped = (
            variants(server, modes, servers, batch_given, given_kind_options()) if modes is not None else ([server], {})
        )
        refuse_unanswered(specs, load)  # every variant before the first round runs
        runs = RunProgress(repeat)
        with bars(load, lambda s: f"{s.label}: {counted(load)}", runs) as on_run:
            run_repeated(
                "latency-compare" if modes is not None else "latency",
                specs,
                repeat,
                lambda spec: api.latency(spec, load, on_run(spec), title),
                skipped,
                json_path,
                runs,
            )
        return
    if modes is None:

        def stopped(results: Sequence[Any]) -> None:
            report_and_save(lambda: latency_report(results[0]), json_path, "latency", results[0])
            unanswered_until_stopped(results)

        with keep_partial(stopped):
            # a heartbeat off a terminal too: the default 100,000 connections take a minute on a busy machine
            with bars(load, lambda s: f"{s.mode}: {counted(load)}", RunProgress(1), count=True) as on_run:
                result = api.latency(server, load, on_run(server), title)
        report_and_save(lambda: latency_report(result), json_path, "latency", result)
        end_if_unmeasured([of_totals(result)], result, json_path)
        return
    # every variant checked before any runs, each kind option given judged against them (even at its default)
    specs, skipped = variants(server, modes, servers, batch_given, given_kind_options())

    def save(results: Sequence[Any], interrupted: bool = False) -> None:
        result = LatencyCompareResult(tuple(results), skipped, interrupted)
        report_and_save(lambda: latency_compare_report(result), json_path, "latency-compare", result)
        if interrupted:
            unanswered_until_stopped(results)

    with keep_partial(lambda results: save(results, interrupted=True)):
        with bars(load, lambda s: f"{s.mode}: {counted(load)}", RunProgress(len(specs)), count=True) as on_run:
            results, skipped = api.compare_latency(server, load, modes, on_run, servers, batch_given)
    save(results)
    named = [(r.server.label, r) for r in results]
    end_if_unmeasured([of_totals(r) for r in results], results, json_path, named)


def unanswered_until_stopped(results: Sequence[Any]) -> None:
    """At a stop (Ctrl-C, SIGTERM), the note the served-nothing line gives at the end where an HTTP server was driven
    with --protocol line: the heartbeat counts each connection that timed out as done, and 'latency --target
    127.0.0.1:8080 -n 20000 -c 50' at nginx read '2,950 of 20,000 connections' and, stopped, '2950 × timeout'
    with no word of --protocol http (its end was over an hour off: each connection waits out --timeout)."""
    from ..core.protocol import ABORTED
    from ..experiments.target_unanswered import SILENT, line_client_unanswered

    for r in results:  # the connections under way at the stop were cut by it, not left unanswered
        failed = (name for name, n in r.errors.items() if n and name != ABORTED)
        if not r.ok and line_client_unanswered(r.server, failed):
            note(f"accept-order: note: {SILENT[0].lower()}{SILENT[1:]}")
            return
