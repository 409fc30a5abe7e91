"""`accept-order inspect PID | --port PORT`: how a running server accepts, read from /proc (read only)."""

from __future__ import annotations

import click

from .app import STOPPED_META, handle_errors
from .common import report_and_save
from .options import examples, json_option
from .types import IntRange


@click.command(
    epilog=examples(
        "accept-order inspect $(pgrep -o nginx)          # the master's pid, or any worker's",
        "accept-order inspect --port 8080",
        "accept-order inspect --port 8080 --json inspect.json && accept-order show inspect.json",
    )
)
@click.argument("pid", type=IntRange(min=1), required=False)
@click.option("--port", "-p", type=IntRange(1, 65535), help="Inspect whoever listens on this TCP port instead.")
@click.option(
    "--samples",
    type=IntRange(1, 100),
    default=5,
    show_default=True,
    help="Looks, 5 ms apart (a lock that moves between workers shows in some of them).",
)
@json_option()
@handle_errors
def inspect(pid: int | None, port: int | None, samples: int, json_path: str | None) -> None:
    """Show how a running server accepts, without disturbing it. Its listeners, how each worker waits,
    the mechanism (in this tool's mode names) and why, and the settings that would change it. Nothing is
    sent to the server and nothing signals it: everything is read from /proc. Another user's server needs
    root."""
    # first: a Ctrl-C even during the imports below must not say it stopped the workers it only reads
    click.get_current_context().meta[STOPPED_META] = "stopped inspecting (the server was not touched)"
    from ..api import inspect as run_inspect
    from ..core.errors import PlanError
    from ..experiments import INSPECT_KIND
    from ..experiments.inspect.report import inspect_report
    from ..probes.serving import check_pid

    if (pid is None) == (port is None):
        raise click.UsageError("give a PID or --port PORT (one of them)")
    try:
        if pid is not None:
            check_pid(pid)  # a number no process can have: a usage error, as observe's
    except PlanError as exc:
        raise click.UsageError(str(exc)) from None
    result = run_inspect(pid=pid, port=port, samples=samples)
    report_and_save(lambda: inspect_report(result), json_path, INSPECT_KIND, result)
