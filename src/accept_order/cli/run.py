"""`accept-order run`: start workers, drive connections one by one, show who served each and why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .app import handle_errors, modules_held
from .common import host_warnings, keep_partial, report_and_save
from .options import attach_options, examples, json_option, mode_option, sequential_options, server_options
from .output import progress_bar
from .progress import RunProgress
from .repeat_common import repeat_option, run_repeated
from .served_nothing import end_if_nothing_served, of_sequential
from .specs import sequential_load, server_spec


@click.command(
    epilog=examples(
        "accept-order run                         # epoll (nginx's default): one worker takes all",
        "accept-order run --mode blocking         # accept() rotates among idle workers",
        "accept-order run -m reuseport -n 30 --json run.json",
        "accept-order run --work 200ms --gap 50ms     # busy workers: who gets the next one?",
        "accept-order run --server nginx -n 40         # Debian's nginx, from a generated config",
        "accept-order run --attach $(cat /run/nginx.pid) --port 80 --protocol http -n 40",
    )
)
@mode_option()
@server_options()
@attach_options(target=True)
@sequential_options()
@repeat_option(variants=None)
@json_option()
@handle_errors
def run(repeat: int, json_path: str | None, **options: Any) -> None:
    """Show which worker serves each connection, one at a time. It starts the workers (or a server) and
    drives the connections itself."""
    with modules_held():
        from ..api import sequential as run_sequential
        from ..experiments.order.report import run_report
        from ..experiments.order.result import RunResult
        from ..servers.registry import server_kind

    server, load = server_spec(options), sequential_load(options)
    host_warnings()
    if repeat > 1:
        if not server_kind(server.kind).launched:
            raise click.UsageError("--repeat compares runs of a server it starts: not with --attach or --target")
        rounds = RunProgress(repeat)  # its heartbeat says the run under way's served and failed too

        def run_one(spec: Any) -> Any:  # no bar over a --repeat (its rounds say it): each run's count from 0
            return run_sequential(spec, load, on_record=counting(rounds.ticking(lambda *_: None, load.connections)))

        run_repeated("run", [server], repeat, run_one, {}, json_path, rounds, tally=of_sequential)
        return

    def save(result: RunResult) -> None:
        report_and_save(lambda: run_report(result), json_path, "run", result)

    # A server this tool starts answers in milliseconds: a short run needs no bar. One it did not start may keep
    # each connection waiting up to --timeout (an HTTP server under --protocol line answers none): 12 silent
    # waits of 5 s were a minute with nothing on the screen.
    threshold = 200 if server_kind(server.kind).launched else 0
    # Off a terminal, a heartbeat says how many were served and how many failed (one waiting out its timeout each)
    runs = RunProgress(1)
    with keep_partial(lambda results: save(results[0])), runs.heartbeat():  # a worker attached may exit mid-run
        with progress_bar(f"{server.mode}: connections", load.connections, threshold=threshold) as update:
            result = run_sequential(server, load, on_record=counting(runs.ticking(update, load.connections)))
    save(result)
    end_if_nothing_served([of_sequential(result)])  # 'Verdict: nothing served' is no measurement: exit 1


def counting(tick: Callable[[int, float], None]) -> Callable[[Any], None]:
    """The sequential client's `on_record` as a load's tick: each record one more finished, with how many of
    them were served and how many timed out."""
    from ..core.finished import Finished
    from ..core.protocol import TIMEOUT

    served = timed_out = finished = 0

    def on_record(record: Any) -> None:
        nonlocal served, timed_out, finished
        finished += 1
        served += record.served
        timed_out += bool(record.error and record.error.startswith(TIMEOUT))  # "timeout: no answer within 5 s"
        tick(Finished(finished, served, timed_out), 0.0)

    return on_record
