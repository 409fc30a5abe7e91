"""`accept-order herd`: every mode with the same workers and connections; how many workers one
connection wakes, with the kernel's evidence."""

from __future__ import annotations

import sys
from typing import Any

import click

from . import records
from .cli import handle_errors, json_option, main, modes_option, progress_for, stderr, stdout, timeout_option
from .herd import DEFAULT_CONNECTIONS, DEFAULT_WORKERS, HERD_MODES, herd_plans, herd_report, run_herd


@main.command()
@modes_option(HERD_MODES, "Comma-separated modes; those this machine lacks are listed as skipped.")
@click.option(
    "--workers", "-w", type=int, default=DEFAULT_WORKERS, show_default=True, help="Worker processes."
)
@click.option(
    "--connections",
    "-n",
    type=int,
    default=DEFAULT_CONNECTIONS,
    show_default=True,
    help="Connections per mode, one after the other, each meeting every worker idle.",
)
@click.option(
    "--work-ms", type=float, default=0.0, show_default=True, help="CPU a worker burns per connection."
)
@click.option("--backlog", type=int, default=511, show_default=True, help="listen() backlog.")
@timeout_option()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--per-worker", is_flag=True, help="Also print each mode's per-worker table.")
@json_option("Write every run as JSON.")
@handle_errors
def herd(modes: list[str], json_path: str | None, per_worker: bool, **options: Any) -> None:
    """Count wakeups per connection in every mode: who wakes one worker, who wakes them all."""
    plans, _ = herd_plans(modes, **options)  # a bad option fails here, before any worker starts
    with progress_for(len(plans) * options["connections"], "herd: connections") as advance:
        result = run_herd(modes, on_record=advance, **options)
    if json_path:
        records.save(json_path, "herd", result.to_dict())
    stdout().print(herd_report(result, per_worker=per_worker))
    if json_path:
        sys.stdout.flush()  # the report before the note, when both go to one terminal or file
        stderr().print(f"wrote {json_path}")
