"""`accept-order sweep`: one latency run per cap on connections accepted per wakeup (seed 001)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from .app import handle_errors
from .common import host_warnings, keep_partial, report_and_save
from .hosts_lost import end_if_unmeasured
from .latency import bars
from .options import (
    accept_batch_option,
    examples,
    json_option,
    load_options,
    mode_option,
    server_options,
    target_options,
)
from .progress import RunProgress
from .repeat_common import repeat_option, run_repeated
from .served_nothing import of_totals
from .specs import concurrent_load, refuse_for_target, server_spec
from .sweep_caps import default_caps


@click.command(
    epilog=examples(
        "accept-order sweep                                # caps 1,4,32 and none, epoll",
        "accept-order sweep --accept-batch 1,0 -n 20000 -c 64 --work 200us",
        "accept-order sweep --mode poll --duration 5s --json sweep.json",
        "accept-order sweep -c 64 --requests-per-connection 0 --pool   # a pool kept for the run: requests per worker",
        "accept-order sweep --target 192.0.2.1:8080 --accept-batch 4 -w 4   # one run: the cap it was started with",
    )
)
@mode_option()
@server_options(workers=None, accept_batch=False)
@accept_batch_option(several=True)
@target_options()
@load_options()
@repeat_option(variants="caps")
@json_option()
@handle_errors
def sweep(json_path: str | None, batches: list[int] | None, repeat: int, **options: Any) -> None:
    """One latency run per cap on accepts per wakeup. Such caps are nginx's multi_accept and DragonFly's
    soavailconn."""
    from .. import api
    from ..experiments import SWEEP_KIND
    from ..experiments.latency.experiment import sweep_result_report
    from ..experiments.latency.result import SweepResult
    from ..servers.registry import checked, refuse_closing

    refuse_for_target(options, repeat)
    if options.get("target") is not None and (batches is None or len(batches) != 1):
        raise click.UsageError(
            "a server elsewhere (--target) runs with the one cap it was started with: give it as --accept-batch N "
            "(one value; 0: none), for one run under its name"
        )
    server = server_spec(options)
    if batches is None:  # none given: sweep's own that the server takes (nginx: 1,0), checked
        batches = default_caps(server)
    elif options.get("target") is None:  # every cap, before the first runs: a cap the server refuses is usage
        for value in batches:
            checked(server.replace(accept_batch=value))
    load = concurrent_load(options, server)
    refuse_closing([server.kind], load)  # before the first cap's run starts
    host_warnings()
    if repeat > 1:
        from ..api import latency as run_latency
        from ..experiments.latency.result import default_title

        specs = [server.replace(accept_batch=value) for value in batches]
        runs = RunProgress(repeat)
        with bars(load, lambda s: f"accept-batch {s.accept_batch or 'none'}", runs) as on_run:
            run_repeated(
                SWEEP_KIND,
                specs,
                repeat,
                lambda spec: run_latency(spec, load, on_run(spec), default_title(spec, sweep=True)),
                {},
                json_path,
                runs,
                tally=lambda r: of_totals(r, cap_name(r)),
            )
        return

    def save(results: Sequence[Any], interrupted: bool = False, stopped: str | None = None) -> None:
        result = SweepResult(tuple(results), interrupted, stopped)
        report_and_save(lambda: sweep_result_report(result), json_path, SWEEP_KIND, result)

    # an error after a cap's run (a client host lost, a driver that could not start): the caps so far, saved
    with keep_partial(lambda results: save(results, interrupted=True), lambda results, why: save(results, stopped=why)):
        cap = RunProgress(len(batches))
        with bars(load, lambda s: f"accept-batch {s.accept_batch or 'none'}", cap, count=True) as on_run:
            results = api.sweep_accept_batch(server, load, batches, on_run)
    save(results)
    caps = [(cap_name(r), r) for r in results]
    end_if_unmeasured([of_totals(r, name) for name, r in caps], results, json_path, caps)


def cap_name(result: Any) -> str:
    """A cap's run as the report names it: 'accept-batch 1', 'accept-batch none'."""
    return f"accept-batch {result.server.accept_batch or 'none'}"
