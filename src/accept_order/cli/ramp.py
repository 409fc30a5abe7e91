"""`accept-order ramp`: step the offered load up until the server stops holding it (seed 002)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import click

from ..core.spec import DEFAULT_DRIVER_PROCS, MAX_CONNECTIONS, MAX_DRIVER_PROCS, Driver
from .app import handle_errors
from .common import host_warnings, keep_partial, report_and_save
from .hosts_lost import end_if_unmeasured
from .load_options import RAMP_COUNTS, client_hosts, clients_options, driver_option, driver_procs_help
from .options import (
    examples,
    json_option,
    load_cpus_option,
    mode_option,
    server_options,
    target_options,
    timeout_option,
)
from .output import progress_bar
from .progress import RunProgress
from .repeat_common import repeat_option, run_repeated
from .served_nothing import Tally, of_parts
from .specs import first_available, given_kind_options, load_cpus, loop_here, refuse_for_target, server_spec
from .types import DURATION, MODE_LIST, IntList, IntRange, parse_float


class FloatList(click.ParamType):
    """`250,500,1e3`: positive numbers."""

    name = "N,N,..."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> list[float]:
        if isinstance(value, list):
            return value
        try:
            values = [parse_float(v) for v in str(value).split(",") if v.strip()]
        except ValueError:
            self.fail(f"{value!r} is not a list of numbers such as 250,500,1000", param, ctx)
        if not values or any(not v > 0 for v in values):
            self.fail(f"{value!r}: every value must be a positive number", param, ctx)
        return values


def _ms(value: Any) -> float | None:
    return None if value is None else float(value) * 1000


@click.command(
    epilog=examples(
        "accept-order ramp --rates 500,1000,2000,4000,8000 --p99 20ms   # open loop, until p99 passes 20 ms",
        "accept-order ramp --concurrency-steps 8,32,128,512 --mode reuseport",
        "accept-order ramp --server haproxy --maxconn 64 --rates 1000,4000,16000 --json ramp.json",
        "accept-order ramp --modes epoll,reuseport --rates 500,1000,2000,4000 --p99 20ms --repeat 3",
        "accept-order ramp --rates 2000,8000,32000 --in-flight 64 --pool --requests-per-connection 0  # over a pool",
        "accept-order ramp --target 192.0.2.1:8080 -w 4 --rates 1000,4000,16000   # a server elsewhere",
    )
)
@mode_option()
@click.option(
    "--modes",
    type=MODE_LIST,
    default=None,
    help="Several modes, one ramp each with the same steps: whose knee is further out (in how many runs, with "
    "--repeat).",
)
@server_options(workers=None)
@target_options()
@click.option(
    "--rates",
    type=FloatList(),
    default=None,
    help="Open loop: new connections per second, one step each [default: 500,1000,2000,4000,8000,16000].",
)
@click.option(
    "--concurrency-steps",
    type=IntList(1, 1_000_000, once=False),  # a step given twice: 'must rise step by step', as --rates says
    default=None,
    help="Closed loop instead: connections in flight, one step each.",
)
@click.option("--step", "step_s", type=DURATION, default="2s", show_default=True, help="How long each step runs.")
@click.option("--p99", type=DURATION, default=None, help="A step whose p99 passes this does not hold, e.g. 20ms.")
@click.option("--p999", type=DURATION, default=None, help="The same for p99.9.")
@click.option("--max-errors", type=IntRange(0, None), default=0, show_default=True, help="Failures a step may have.")
@click.option(
    "--in-flight",
    type=IntRange(1, None),
    default=1000,
    show_default=True,
    help="Open loop: most connections the load generator keeps in flight.",
)
@click.option("--keep-going", is_flag=True, help="Run every step, past the first that did not hold.")
@click.option(
    "--driver-procs",
    type=IntRange(1, MAX_DRIVER_PROCS),
    default=DEFAULT_DRIVER_PROCS,
    show_default=True,
    help=driver_procs_help("Load generator processes"),
)
@driver_option()
@timeout_option("5s", "connection", kept=True)
@load_cpus_option()
@clients_options(counts=RAMP_COUNTS)
# Both mean something on a ramp: a step's load is a load like latency's, and kept connections are how a
# proxy's traffic reaches its backends (a ramp of rates over a pool: where the worker that holds the most
# of the pool saturates). Each step opens its own connections (and fills its own pool) at its start.
@click.option(
    "--requests-per-connection",
    "requests_per_connection",
    type=IntRange(0, MAX_CONNECTIONS),
    default=1,
    show_default=True,
    help="Requests over each connection before the client closes it: 1 (connect, reply, close), K > 1, or 0: "
    "each connection lives for the whole step. Not 1: --rates count requests per second, and each request's "
    "time is one sample.",
)
@click.option(
    "--pool",
    is_flag=True,
    help="At each step's start, open its connections (--in-flight, or the step's concurrency) one after another "
    "at idle, as a proxy fills its pool, then run the step's requests over them.",
)
# latency's -c is the clients of a closed loop, or with --rate the most in flight: a ramp steps the one
# (--concurrency-steps) and caps the other (--in-flight), so one -c would mean either; refused with why.
@click.option("-c", "--concurrency", "concurrency", type=int, default=None, hidden=True)
@repeat_option(given_by="--modes")
@json_option()
@handle_errors
def ramp(
    modes: list[str] | None,
    repeat: int,
    rates: list[float] | None,
    concurrency_steps: list[int] | None,
    step_s: float,
    p99: float | None,
    p999: float | None,
    max_errors: int,
    in_flight: int,
    keep_going: bool,
    driver_procs: int,
    driver: Driver,
    timeout_s: float,
    requests_per_connection: int,
    pool: bool,
    concurrency: int | None,
    json_path: str | None,
    **options: Any,
) -> None:
    """Step the load up to find the breaking point, and say why. Each step is a heavier load, until errors
    appear or the tail passes a bound."""
    from ..api import ramp as run_ramp
    from ..experiments.ramp.report import ramp_report
    from ..experiments.ramp.run import RampPlan

    if concurrency is not None:
        raise click.UsageError(
            f"ramp takes no -c: its steps set the load, --concurrency-steps {concurrency} (a closed loop of "
            f"{concurrency} connections in flight, latency's -c) or --rates with --in-flight {concurrency} (the most "
            "in flight, latency's -c with --rate)"
        )
    if rates is not None and concurrency_steps is not None:
        raise click.UsageError("give --rates (open loop) or --concurrency-steps (closed loop), not both")
    if rates is None and concurrency_steps is None:
        rates = [500, 1000, 2000, 4000, 8000, 16000]
    if modes is not None and options.get("mode") is not None:
        raise click.UsageError("give --mode for one ramp or --modes for several, not both")
    refuse_for_target(options, repeat)
    batch_given = options.get("accept_batch") is not None
    server = server_spec(options, mode=first_available(modes, options["server"]) if modes else None, varied=bool(modes))
    kind = server.kind
    hosts = client_hosts(options, server)
    plan = RampPlan(
        rates=tuple(rates or ()),
        concurrencies=tuple(concurrency_steps or ()),
        step_s=step_s,
        in_flight=in_flight,
        p99_ms=_ms(p99),
        p999_ms=_ms(p999),
        max_errors=max_errors,
        driver_procs=driver_procs,
        timeout_s=timeout_s,
        keep_going=keep_going,
        load_cpus=load_cpus(options, server, hosts),
        requests_per_connection=requests_per_connection,
        pool=pool,
        client_hosts=hosts,
        driver=driver,
    ).validated()
    from ..servers.held_whole_run import refuse_unanswered
    from ..servers.registry import refuse_closing, variants

    refuse_closing([kind], plan.load(plan.offered[0]))  # before the server starts
    loop_here(plan.load(plan.offered[0]))

    # checked first, each kind option given judged against the modes (even at its default)
    specs, skipped = variants(server, modes, [kind], batch_given, given_kind_options()) if modes else ([server], {})
    # the most connections the ramp holds at once (its largest step, or an open loop's in flight), every mode
    held = plan.in_flight if plan.rates else max(plan.concurrencies)
    refuse_unanswered(specs, plan.load(plan.offered[0]), held, "--in-flight" if plan.rates else "--concurrency-steps")
    host_warnings()
    # run_repeated counts every run of every round; one ramp counts its steps (it may stop before the last)
    single = repeat == 1 and len(specs) == 1
    # one ramp stops at its knee (unless --keep-going): its estimate is of every step, an upper bound
    steps = len(plan.rates or plan.concurrencies)
    rounds = RunProgress(steps, noun="step", may_end_early=not keep_going) if single else RunProgress(repeat)

    def save(result: Any) -> None:
        report_and_save(lambda: ramp_report(result), json_path, "ramp", result)

    ramped = [specs[0]]  # the spec being ramped, for the progress bars

    with ExitStack() as bars:

        def on_step(offered: float) -> Any:
            bars.close()
            if single:
                rounds.next()
            label = f"{offered:g}/s" if plan.rates else f"{offered:g} in flight"
            said = rounds.live(f"{ramped[0].label}: {label}")
            # a kept connection's requests are what its load counts: '1,706 connections' over a pool of 16
            unit = "requests" if plan.load(offered).keeps_connections else "connections"
            bar = progress_bar(said, step_s, by_count=False, timeout_s=timeout_s, ticks=True, unit=unit)
            return rounds.ticking(bars.enter_context(bar), None, unit)  # off a terminal, the heartbeat says how far

        if repeat > 1 or len(specs) > 1:  # several modes: a table of their knees, even once

            def one(spec: Any) -> Any:
                ramped[0] = spec
                return run_ramp(spec, plan, on_step)

            run_repeated("ramp", specs, repeat, one, skipped, json_path, rounds, tally=ramp_tally)
            return
        # an error after a step (a client host lost, a driver that could not start): the steps so far, saved
        kept = keep_partial(lambda results: save(results[0]), lambda results, why: save(results[0]))
        with kept, rounds.heartbeat():
            result = run_ramp(specs[0], plan, on_step)
    save(result)
    named = [(step_name(step), step) for step in result.steps]
    # no step served any (an HTTPS port): why, and exit 1
    end_if_unmeasured([ramp_tally(result)], result, json_path, named)


def ramp_tally(result: Any) -> Tally:
    """A ramp's steps together: a step that served none after others served is its knee, not a failure."""
    return of_parts(result.server, result.steps)


def step_name(step: Any) -> str:
    """A step as the report's table names it: 'the 400/s step', 'the 32 in flight step'."""
    return f"the {step.offered:g}/s step" if step.kind == "rate" else f"the {step.offered:g} in flight step"
