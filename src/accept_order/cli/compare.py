"""`accept-order compare`: every mode with the same settings, side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from .app import handle_errors
from .common import host_warnings, keep_partial, report_and_save
from .options import examples, json_option, modes_option, sequential_options, server_options
from .repeat_common import repeat_option, run_repeated
from .served_nothing import end_if_nothing_served, of_sequential
from .specs import first_available, given_kind_options, sequential_load, server_spec


@click.command(
    epilog=examples(
        "accept-order compare                          # every mode this machine supports",
        "accept-order compare --modes blocking,epoll,reuseport -n 12",
        "accept-order compare --json compare.json && accept-order show compare.json",
        "accept-order compare --modes blocking,epoll --repeat 10     # does every run agree?",
    )
)
@modes_option()
@server_options(several=True)
@sequential_options()
@repeat_option(variants="modes and servers")
@json_option()
@handle_errors
def compare(modes: list[str], repeat: int, json_path: str | None, **options: Any) -> None:
    """Compare the modes side by side, in one table. Every mode this machine supports (or --modes) runs
    with the same settings."""
    from .. import api
    from ..experiments.order.compare_experiment import compare_report
    from ..experiments.order.compare_result import CompareResult
    from ..servers.registry import variants

    servers: list[str] = options["server"]
    batch_given = options.get("accept_batch") is not None
    server, load = server_spec(options, mode=first_available(modes, servers), varied=True), sequential_load(options)
    host_warnings()
    # every mode checked before any runs, each kind option given judged against them (even at its default)
    specs, skipped = variants(server, modes, servers, batch_given, given_kind_options())
    if repeat > 1:
        run_repeated(
            "compare", specs, repeat, lambda spec: api.sequential(spec, load), skipped, json_path, tally=of_sequential
        )
        return

    def save(results: Sequence[Any], interrupted: bool = False) -> None:
        result = CompareResult(tuple(results), skipped, interrupted)
        report_and_save(lambda: compare_report(result), json_path, "compare", result)

    with keep_partial(lambda results: save(results, interrupted=True)):
        results, skipped = api.compare(server, load, modes, servers=servers, batch_given=batch_given)
    save(results)
    end_if_nothing_served([of_sequential(r) for r in results])
