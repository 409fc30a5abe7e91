"""An open-loop ramp says the connections a step had due that never started, as latency does of a timed open loop:
'ramp --server caddy --rates 500,2000,6000 --step 2s' (Debian's Caddy, 2 CPUs) drove 11,828 of the 12,000 due at
6000/s, its --in-flight cap full, and the report said nothing of the 172 (its got/s counts only those driven)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from rich.console import Console

from accept_order.experiments.ramp.report import ramp_report
from accept_order.experiments.ramp.result import RampResult
from accept_order.experiments.ramp.unstarted import unstarted, unstarted_line

FILE = Path(__file__).parent / "data" / "ramp_caddy_tail_rose.json"  # that run's file


def _result() -> RampResult:
    return RampResult.from_dict(json.loads(FILE.read_text()))


def _shown(result: RampResult) -> str:
    console = Console(width=200, record=True, color_system=None)
    with console.capture() as capture:
        console.print(ramp_report(result))
    return " ".join(capture.get().split())


def test_the_steps_due_connections_never_started_are_said() -> None:
    result = _result()
    assert [unstarted(s, 2.0, 2) for s in result.steps] == [(0, 1000), (0, 4000), (172, 12000)]
    assert [s.driven for s in result.steps] == [1000, 4000, 11828]  # the file's own counts
    assert "Due but never started (not in the figures): 6000/s: 172 of the 12,000 due in its 2 s" in _shown(result)


def test_a_shortfall_a_driver_each_may_leave_or_a_stopped_step_is_not_said() -> None:
    result = _result()
    last = result.steps[-1]
    short_by_two = dataclasses.replace(last, served=(11998,))  # 2 drivers, each one short at the deadline
    assert unstarted(short_by_two, 2.0, 2) == (0, 12000)
    assert unstarted(dataclasses.replace(last, interrupted=True), 2.0, 2) == (0, 0)
    assert unstarted(dataclasses.replace(last, kind="concurrency"), 2.0, 2) == (0, 0)
    every = dataclasses.replace(result, steps=(*result.steps[:-1], short_by_two))
    assert unstarted_line(every) is None and "never started" not in _shown(every)
