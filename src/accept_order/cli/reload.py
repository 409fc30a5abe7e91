"""`accept-order reload`: what each mode loses when one worker goes mid-load (graceful or SIGKILL)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

import click

from ..core.spec import DEFAULT_KIND
from .app import handle_errors
from .common import host_warnings, keep_partial, report_and_save
from .options import examples, json_option, load_options, modes_option, server_options
from .output import progress_bar
from .progress import RunProgress
from .repeat_common import repeat_option, run_repeated
from .served_nothing import Tally, end_if_nothing_served, of_totals
from .specs import concurrent_load, first_available, given_kind_options, server_spec
from .types import FloatRange, IntList, IntRange

DEFAULT_MODES = "blocking,epoll,accept-mutex,fd-pass,io-uring,reuseport"


@click.command(
    epilog=examples(
        "sudo accept-order reload                      # the cures; leave and kill; tcp_migrate_req 0 and 1",
        "sudo accept-order reload --modes reuseport --how leave -c 64 --work 1ms",
        "sudo accept-order reload --duration 5s --worker 1 --at 0.3 --json reload.json",
        "sudo accept-order reload --modes epoll,reuseport --how leave --repeat 5    # the same losses every run?",
    )
)
@modes_option(default=DEFAULT_MODES, help="Comma-separated modes, or all.")
@server_options(workers=3, kinds=(DEFAULT_KIND,))  # reload makes the built-in workers go
@load_options(count=False, duration="2s", kept=False, hosts=False)  # the worker goes part-way through a duration
@click.option(
    "--how",
    "hows",
    type=click.Choice(["leave", "kill", "leave,kill", "kill,leave"]),
    default="leave,kill",
    show_default=True,
    help="How the worker goes: leave (closes its listener, serves what it holds, exits) or kill (SIGKILL).",
)
@click.option(
    "--migrate",
    type=IntList(0, 1),
    default="0,1",
    show_default=True,
    help="net.ipv4.tcp_migrate_req settings to run reuseport modes with (set in a private namespace only).",
)
@click.option("--worker", type=IntRange(0, None), default=0, show_default=True, help="Which worker goes.")
@click.option(
    "--at",
    type=FloatRange(0, 1, min_open=True, max_open=True),
    default=0.5,
    show_default=True,
    help="When it goes, as a share of --duration.",
)
@repeat_option()
@json_option()
@handle_errors
def reload(
    modes: list[str],
    hows: str,
    migrate: list[int],
    worker: int,
    at: float,
    repeat: int,
    json_path: str | None,
    **options: Any,
) -> None:
    """Take one worker away mid-load: what each mode loses. Connections served, reset, refused and timed
    out, and why.

    Runs in a private network namespace it creates (as root; as a user, inside a user namespace of its
    own where the kernel allows one), where it sets net.ipv4.tcp_migrate_req for each run; the host's
    setting is never changed."""
    import ipaddress

    from ..api import reload as reload_runs
    from ..core import netns
    from ..core.addresses import resolve_host
    from ..experiments.reload.report import reload_report
    from ..experiments.reload.result import ReloadResult
    from ..experiments.reload.run import ReloadPlan, available, plans
    from ..probes.evidence import PRIVATE_ENV

    if not ipaddress.ip_address(resolve_host(options.get("host") or "127.0.0.1")[0]).is_loopback:
        raise click.UsageError(
            "reload runs in a private network namespace that has only loopback: use --host 127.0.0.1 or ::1"
        )
    names, skipped = available(None if modes == ["all"] else modes)
    if not names:
        from ..core.errors import NothingToRun

        raise NothingToRun(f"nothing to run: {'; '.join(f'{mode} ({why})' for mode, why in skipped.items())}")
    server = server_spec(options, mode=first_available(modes), varied=True)
    load = concurrent_load(options, server)
    host_warnings()
    host_setting = netns.read_sysctl(netns.MIGRATE_REQ)
    settings = sorted(set(migrate))
    if host_setting is None and 1 in settings:
        settings = [0]
        skipped["tcp_migrate_req=1"] = "this kernel has no net.ipv4.tcp_migrate_req (Linux 5.14+)"
    variants = [
        (spec, _with(plan, worker, at))
        for spec, plan in plans(server, names, hows.split(","), settings, given_kind_options())
    ]
    for spec, plan in variants:
        plan.validated(spec, load)  # every variant checked before the namespace is made or anything runs
    per_worker = {spec.mode for spec, plan in variants if plan.migrate}
    netns.enter_private()  # from here on this process (and all it starts) is in a namespace of its own
    os.environ[PRIVATE_ENV] = "1"  # the evidence says so (PID 1's namespace cannot always be compared)
    # run_repeated counts every run of every round; one round counts its runs here (on_run)
    rounds = RunProgress(repeat if repeat > 1 else len(variants))

    def save(runs: Sequence[Any], interrupted: bool = False) -> None:
        result = ReloadResult(tuple(runs), skipped, host_setting, interrupted)
        report_and_save(lambda: reload_report(result), json_path, "reload", result)

    with ExitStack() as bars:

        def on_run(spec: Any, plan: ReloadPlan) -> Any:
            bars.close()  # one bar per run
            if repeat == 1:
                rounds.next()
            label = f"{spec.mode} {plan.how}" + (f" migrate={plan.migrate}" if spec.mode in per_worker else "")
            bar = progress_bar(rounds.live(label), load.duration_s, False, timeout_s=load.timeout_s, ticks=True)
            return rounds.ticking(bars.enter_context(bar), None)  # off a terminal, the heartbeat says how far

        if repeat > 1:
            kept = [f"The host's net.ipv4.tcp_migrate_req ({host_setting}) was not changed."] if host_setting else []

            def one(variant: tuple[Any, ReloadPlan]) -> Any:
                return reload_runs([variant], load, on_run)[0]

            run_repeated("reload", variants, repeat, one, skipped, json_path, rounds, kept, tally=reload_tally)
            return
        with keep_partial(lambda runs: save(runs, interrupted=True)), rounds.heartbeat():
            runs = reload_runs(variants, load, on_run)
    save(runs)
    end_if_nothing_served([reload_tally(run) for run in runs])


def _with(plan: Any, worker: int, at: float) -> Any:
    import dataclasses

    return dataclasses.replace(plan, worker=worker, at=at)


def reload_tally(run: Any) -> Tally:
    """One run as the report names it (report.run_name): its mode, how the worker went, and tcp_migrate_req where a
    run has one (per-worker queues), not 'epoll leave migrate=0' of a shared queue, which the setting does not touch."""
    from ..experiments.reload.report import run_name

    return of_totals(run, run_name(run))
