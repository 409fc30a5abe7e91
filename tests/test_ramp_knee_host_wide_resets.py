"""ramp's knee put down to other traffic's resets: 'ramp -w 2 --work 500us --rates 500,... --p99 20ms' beside
other helpers' tests said 'Knee: no step held; the first that did not was 500/s: p99 100.7 ms > 20 ms. There:
12212 connections reset; ...' with 0 failed: TcpEstabResets is the host's counter, and a step that lost no
connection lost none to a reset. The seen line says host-wide, and whose they cannot have been."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from accept_order.experiments.ramp.result import RampResult, RampStep
from accept_order.experiments.ramp.step_verdict import signals

GOLDEN = Path(__file__).parent / "data" / "golden" / "ramp.json"


def _step(errors: dict[str, int]) -> RampStep:
    step = RampResult.from_dict(json.loads(GOLDEN.read_text())).steps[0]
    return dataclasses.replace(step, errors=errors, counters={"TcpEstabResets": 11973, "TcpExtTCPAbortOnData": 239})


def test_resets_beside_no_failure_are_said_to_be_none_of_the_steps() -> None:
    seen = signals(_step({}), 2, 2)
    said = [s for s in seen if "reset" in s]
    assert said == ["12212 connections reset host-wide, none of them this step's (it failed none)"]


def test_resets_beside_failures_stay_a_host_wide_count() -> None:
    seen = signals(_step({"ECONNRESET": 40}), 2, 2)
    said = [s for s in seen if "reset" in s]
    assert said == ["12212 connections reset host-wide"]


def test_kept_connections_closed_at_the_steps_end_may_be_its_own() -> None:
    kept = dataclasses.replace(_step({}), connections=(16, 16))
    said = [s for s in signals(kept, 2, 2) if "reset" in s]
    assert said == ["12212 connections reset host-wide"]
