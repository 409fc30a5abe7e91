"""`accept-order observe PID | --port PORT`: a running server's own traffic, passively: who takes what."""

from __future__ import annotations

from typing import Any

import click

from .app import STOPPED_META, handle_errors
from .common import keep_partial, report_and_save
from .options import examples, json_option
from .output import live_view
from .types import DURATION, IntRange


@click.command(
    epilog=examples(
        "accept-order observe 1234          # nginx's master pid (or a worker's)",
        "accept-order observe --port 8080 --duration 2m --json observe.json",
        "accept-order plot observe.json -o shares.png   # shares over time, queue",
    )
)
@click.argument("pid", type=IntRange(1, None), required=False)
@click.option("--port", "-p", type=IntRange(1, 65535), default=None, help="Find the server by its listening port.")
@click.option("--duration", "duration_s", type=DURATION, default="30s", show_default=True, help="How long to watch.")
@click.option(
    "--interval",
    "interval_s",
    type=DURATION,
    default="1s",
    show_default=True,
    help="How often the view is redrawn (a line off a terminal), and the share over time's step.",
)
@click.option(
    "--no-trace",
    is_flag=True,
    help="Do not load eBPF (bpftrace): sample who holds which connection from /proc instead (approximate).",
)
@json_option()
@handle_errors
def observe(
    pid: int | None,
    port: int | None,
    duration_s: float,
    interval_s: float,
    no_trace: bool,
    json_path: str | None,
) -> None:
    """Watch which worker of a running server takes its traffic. Per worker what it accepts, the
    connections it holds and the bytes they carry, its CPU, and the listen queue.

    Nothing is driven at the server and nothing signals it: the kernel counts each worker's accepts
    (bpftrace on the accept tracepoints, as root; per thread for a threaded server such as HAProxy),
    inet_diag's tcp_info gives each open connection's bytes (sampled, and at each close the kernel's
    announcement of it adds what it carried since; where that cannot be joined, what a connection carries after
    the last look before it closes is not counted, and the report says how much that could be), and
    /proc gives the rest. Ctrl-C ends it early and keeps what was observed.
    """
    # first: a Ctrl-C even during the imports below must not say it stopped workers it only watches
    click.get_current_context().meta[STOPPED_META] = "stopped observing (the server was not touched)"
    from ..api import observe as observe_server
    from ..core.errors import PlanError
    from ..experiments.observe.report import interval_line, observe_report
    from ..experiments.observe.report import live_view as view
    from ..experiments.observe.run import check

    if pid is not None and port is not None:
        raise click.UsageError("give the server's PID or --port, not both")
    if pid is None and port is None:
        raise click.UsageError("give the server's PID (its master, a worker or a thread) or --port")
    try:
        check(pid, port, duration_s, interval_s)
    except PlanError as exc:  # the same line as any bad option
        raise click.UsageError(str(exc)) from None

    def save(result: Any) -> None:
        report_and_save(lambda: observe_report(result), json_path, "observe", result)

    with keep_partial(lambda results: save(results[0])):
        with live_view(view, interval_line) as update:
            result = observe_server(pid, port, duration_s, update, not no_trace, interval_s)
    save(result)
