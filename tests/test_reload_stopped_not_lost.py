"""reload cut short by Ctrl-C: the connections in flight when it was stopped count as aborted (the load's
rule), which the tool's stop made, not the worker's going. 'reload -c 8 --work 1ms --duration 2s' stopped
at 2 s said 'interrupted; lost 8 so far' of its 8 in flight, for blocking leave, which loses nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from accept_order.core.protocol import ABORTED
from accept_order.experiments.reload.report import verdict_text
from accept_order.experiments.reload.result import ReloadRun

GOLDEN = Path(__file__).parent / "data" / "golden" / "reload.json"


def golden_run(index: int) -> ReloadRun:
    return ReloadRun.from_dict(json.loads(GOLDEN.read_text())["runs"][index])


def test_connections_under_way_when_stopped_are_not_lost() -> None:
    run = replace(golden_run(0), interrupted=True, errors={ABORTED: 8})
    said = verdict_text(run).plain
    assert said.startswith("interrupted; lost 0 so far"), said
    assert "8 under way when it was stopped" in said, said


def test_a_loss_before_the_stop_is_still_said() -> None:
    run = replace(golden_run(1), interrupted=True, errors={"ECONNRESET": 5, ABORTED: 3})
    said = verdict_text(run).plain
    assert said.startswith("interrupted; lost 5 so far"), said
    assert "3 under way when it was stopped" in said, said
    assert verdict_text(replace(run, errors={"ECONNRESET": 5})).plain == "interrupted; lost 5 so far"
