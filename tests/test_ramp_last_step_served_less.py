"""`ramp --server haproxy -w 2 --pool --requests-per-connection 0 --concurrency-steps 4,16 --step 1s --work 1ms`
on a busy machine: 98/s at 4 in flight, 19/s at 16 (its slowest request 3.9 s), both steps 'held' (nothing failed,
no --p99 given), and the report said 'Every step held, up to 16 in flight: the breaking point is further out.'
More load served less: the report now says so beside the holds, and what a hold is."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

from rich.console import Console

from accept_order.experiments.ramp.report import ramp_report
from accept_order.experiments.ramp.result import RampResult

FILE = Path(__file__).parent / "data" / "first_hour_5_ramp_pool.json"  # the run above, its file


def _said(result: RampResult) -> str:
    console = Console(width=400, file=io.StringIO())
    console.print(ramp_report(result))
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_a_last_step_that_served_under_half_an_earlier_one_is_said() -> None:
    result = RampResult.from_dict(json.loads(FILE.read_text()))
    assert [round(s.throughput) for s in result.steps] == [98, 19]
    said = _said(result)
    assert "the breaking point is further out" not in said
    assert (
        "Every step held, up to 16 in flight, but 16 in flight got 19/s, less than half the 98/s of 4 in flight: "
        "more load was served less, though its workers were no busier (9% of their CPUs, 9% at 4 in flight) and "
        "the host's CPUs were 100% busy; its slowest request took 3.9 s, longer than the 1 s step (a step holds "
        "where nothing failed; no --p99 or --p999 was given)." in said  # review RF: not 'as past a breaking point'"
    )


def test_steps_that_served_more_keep_the_breaking_point_further_out() -> None:
    result = RampResult.from_dict(json.loads(FILE.read_text()))
    first, last = result.steps
    # its tail kept too: a p99 of 3.9 s beside 95 ms is a rise no step was held to (test_ramp_held_tail_unjudged)
    kept = dataclasses.replace(last, wall_s=first.wall_s, p99_us=first.p99_us)
    steady = dataclasses.replace(result, steps=[first, kept])
    assert "Every step held, up to 16 in flight: the breaking point is further out." in _said(steady)
