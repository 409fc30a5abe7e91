"""The busy-time model tests' shared steps (test_model_busy_service, test_model_busy_accept_lock): what
probes/busy_waits.BusySampler reads of some processes over a few looks made in the test's own thread, and a latency
run attached to a gunicorn started by hand (tests/gunicorn_by_hand.py) beside gunicorn's own time for each request.

Imported by name, as conftest's helpers are (tests/ is on sys.path; no test_ prefix, so pytest collects nothing
here)."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from cli_runs import run_cli
from click.testing import Result
from gunicorn_by_hand import HandGunicorn

from accept_order.probes.busy_waits import BusySampler

LOOKS = 5
ATTACHED_REQUESTS = 1500


def looked(pids: Sequence[int], listeners: Collection[int] = ()) -> dict[str, Any] | None:
    """The sampler's reading of `pids` (their listeners' inodes given) after LOOKS looks, each of which found a
    worker to read."""
    sampler = BusySampler(pids, listeners=listeners)
    sampler.start(thread=False)
    for _ in range(LOOKS):
        assert sampler.look()
    return sampler.stop()


def attached_latency(gunicorn: HandGunicorn, folder: Path) -> tuple[Result, list[int], dict[str, Any]]:
    """'latency --attach' at `gunicorn` (ATTACHED_REQUESTS requests over HTTP, 12 at once), which must exit 0: its
    output, gunicorn's own time for each request (its access log written with '--access-logformat %(D)s', µs), and
    the model the result file kept."""
    out = folder / "latency.json"
    args = ["latency", "--attach", str(gunicorn.master), "--port", str(gunicorn.port), "--protocol", "http"]
    result = run_cli([*args, "-n", str(ATTACHED_REQUESTS), "-c", "12", "--json", str(out)], columns=400)
    assert result.exit_code == 0, result.output
    times_us = [int(line) for line in gunicorn.access_log.read_text().split()]
    assert len(times_us) == ATTACHED_REQUESTS, times_us[:5]
    return result, times_us, json.loads(out.read_text())["model"]
