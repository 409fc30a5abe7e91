"""'ramp --server caddy --rates 500,2000,6000 --step 2s' (Debian's Caddy, 2 CPUs, load 4.5, no --p99): 6000/s got
5519/s with its p99 at 321.54 ms against 4.18 ms at 500/s and up to 537 connections in the accept queue, and the
report said 'Every step held, up to 6000/s: the breaking point is further out.' (caddy's accepts, counted by
bpftrace on sys_exit_accept4: 16,828, the steps' 1,000 + 4,000 + 11,828 served). A hold with no tail limit is
failures and rate alone: the report now says so, and the rise, where the last step's p99 is 10x an earlier one's."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

from rich.console import Console

from accept_order.experiments.ramp.report import ramp_report
from accept_order.experiments.ramp.result import RampResult

FILE = Path(__file__).parent / "data" / "ramp_caddy_tail_rose.json"  # the run above, its file


def _said(result: RampResult) -> str:
    console = Console(width=400, file=io.StringIO())
    console.print(ramp_report(result))
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_a_tail_no_step_was_held_to_is_said() -> None:
    result = RampResult.from_dict(json.loads(FILE.read_text()))
    assert [s.p99_us for s in result.steps] == [4185, 7175, 321541] and result.knee[1] is None
    assert (
        "Every step held, up to 6000/s (a step holds where nothing failed and it finished 90% of the rate offered; "
        "no --p99 or --p999 was given), but its p99 rose to 321.54 ms at 6000/s, 77× the 4.18 ms of 500/s: by "
        "failures and rate alone, the breaking point is further out. How sure: one run" in _said(result)
    )


def test_a_tail_that_did_not_rise_keeps_the_plain_sentence() -> None:
    result = RampResult.from_dict(json.loads(FILE.read_text()))
    steady = dataclasses.replace(result, steps=[dataclasses.replace(s, p99_us=7175) for s in result.steps])
    assert "Every step held, up to 6000/s: the breaking point is further out. How sure" in _said(steady)
    limited = dataclasses.replace(result, plan={**result.plan, "p99_ms": 500.0})  # held to a limit it kept
    assert "Every step held, up to 6000/s: the breaking point is further out. How sure" in _said(limited)
