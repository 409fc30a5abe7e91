"""`accept-order atlas`: every installed server in each of its modes, measured the same way, in one table."""

from __future__ import annotations

from typing import Any

import click

from .app import handle_errors
from .common import keep_partial, report_and_save
from .load_options import driver_option
from .options import examples, json_option, server_option
from .output import note
from .progress import RunProgress
from .specs import loop_here
from .types import IntRange


@click.command(
    epilog=examples(
        "accept-order atlas",
        "accept-order atlas --server nginx,haproxy --repeat 3 --json atlas.json",
        "accept-order show atlas.json --format csv",
    )
)
@server_option(several=True, default=None, every="every one installed")
@click.option("-w", "--workers", type=IntRange(2, 64), default=3, show_default=True, help="Workers of every server.")
@click.option(
    "-n", "--connections", type=IntRange(2, 10_000), default=12, show_default=True,
    help="Sequential connections at an idle server: the order it hands them out in.",
)  # fmt: skip
@click.option(
    "--load-connections", type=IntRange(1, 10_000_000), default=3000, show_default=True,
    help="Connections of the closed-loop load: the share each worker gets, and the tail.",
)  # fmt: skip
@click.option("-c", "--concurrency", type=IntRange(1, 100_000), default=20, show_default=True, help="In flight.")
@click.option("--repeat", type=IntRange(1, 100), default=1, show_default=True, help="Rounds; the table shows medians.")
@driver_option()
@json_option()
@handle_errors
def atlas(json_path: str | None, **options: Any) -> None:
    """Run every installed server in each of its modes, side by side. Each of nginx, HAProxy, gunicorn,
    Node, uWSGI, ... runs with the same workers and loads: the mechanism /proc shows, the order at idle, the
    share under load, the herd, the tail, and the setting that selects each mode."""
    from ..api import atlas as run_atlas
    from ..experiments.atlas.report import atlas_report
    from ..experiments.atlas.result import AtlasResult
    from ..experiments.atlas.run import AtlasPlan

    plan = AtlasPlan(
        servers=tuple(options["server"] or ()),
        workers=options["workers"],
        connections=options["connections"],
        load_connections=options["load_connections"],
        concurrency=options["concurrency"],
        repeat=options["repeat"],
        driver=options["driver"],
    )
    loop_here(plan.load())  # io_uring where it cannot run: refused before any server starts

    runs = RunProgress(0)

    def progress(spec: Any, k: int, total: int) -> None:
        runs.total = total
        runs.start(k)
        note(f"accept-order atlas: {runs.status()}: {spec.label}")
        runs.last_beat = runs.clock()  # that line was this beat

    def save(result: AtlasResult) -> None:
        report_and_save(lambda: atlas_report(result), json_path, "atlas", result)

    with keep_partial(lambda results: save(results[0])):
        with runs.heartbeat():
            result = run_atlas(plan, progress)
    save(result)
