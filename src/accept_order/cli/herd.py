"""`accept-order herd`: every mode, the same workers and connections; how many workers one connection wakes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from .app import handle_errors
from .common import host_warnings, keep_partial, report_and_save
from .options import examples, json_option, modes_option, sequential_options, server_options
from .output import progress_bar
from .repeat_common import repeat_option, run_repeated
from .served_nothing import end_if_nothing_served, of_sequential
from .specs import first_available, given_kind_options, sequential_load, server_spec


@click.command(
    epilog=examples(
        "accept-order herd                             # every mode, 4 workers, 20 connections each",
        "accept-order herd --modes epoll,epoll-herd,poll,select --per-worker",
        "accept-order herd -w 8 -n 50 --json herd.json",
    )
)
@modes_option(help="Comma-separated modes, or all; those this machine lacks are listed as skipped.")
@server_options(workers=4)
@sequential_options(connections=20, pacing=False)
@click.option("--per-worker", is_flag=True, help="Also print each mode's per-worker table.")
@repeat_option()
@json_option()
@handle_errors
def herd(modes: list[str], repeat: int, json_path: str | None, per_worker: bool, **options: Any) -> None:
    """Count the workers each connection wakes, in every mode. Some modes wake one worker, some wake them
    all."""
    from .. import api
    from ..experiments.herd.report import herd_report
    from ..experiments.herd.result import HerdResult
    from ..servers.registry import variants

    server, load = (
        server_spec(options, mode=first_available(modes, options["server"]), varied=True),
        sequential_load(options),
    )
    specs, skipped = variants(server, modes, given=given_kind_options())  # every mode checked before any runs
    host_warnings()
    if repeat > 1:
        import dataclasses

        from ..api import sequential as run_sequential

        herd_load = dataclasses.replace(load, settle=True, gap_ms=0.0)  # as api.herd runs it
        run_repeated(
            "herd", specs, repeat, lambda spec: run_sequential(spec, herd_load), skipped, json_path, tally=of_sequential
        )
        return

    def save(result: HerdResult) -> None:
        report_and_save(lambda: herd_report(result, per_worker=per_worker), json_path, "herd", result)

    def save_partial(runs: Sequence[Any]) -> None:  # the modes that finished, as api.herd would have them
        save(
            HerdResult(
                server.workers, load.connections, server.work_us, server.listen_backlog, tuple(runs), skipped, True
            )
        )

    total = len(specs) * load.connections
    with keep_partial(save_partial):
        with progress_bar("herd: connections", total, threshold=200) as update:
            done = [0]

            def advance(_record: Any) -> None:
                done[0] += 1
                update(done[0])

            result = api.herd(server, load, modes, on_record=advance)
    save(result)
    end_if_nothing_served([of_sequential(run) for run in result.runs])
