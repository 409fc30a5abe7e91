"""Review RF of 0f25e41 (ramp: a last step that served under half an earlier one is said, not 'further out'): ramp
--modes and --repeat kept the old words. Every step held in each mode's ramp, its last serving under half of an
earlier one, read 'every step held in each, the breaking points are further out (higher --rates)', of a ramp whose
steps were --concurrency-steps, not rates. Now each such mode's line says what its steps served, and the verdict
does not call the breaking points further out; where none fell, it names the option the steps were.

And the single ramp's sentence said 'as past a breaking point' of that file, whose workers used 9% of their CPUs at
both steps (the host's 100% busy) and whose 1 s step lasted 4.1 s for one request of 3.9 s: it says so now, and
'as past a breaking point' only where the workers were busier at the last step."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

from rich.console import Console

from accept_order.core.spec import ServerSpec
from accept_order.experiments.ramp.repeated import report, report_once
from accept_order.experiments.ramp.report import served_less
from accept_order.experiments.ramp.result import RampResult

FILE = Path(__file__).parent / "data" / "first_hour_5_ramp_pool.json"  # 98/s at 4 in flight, then 19/s at 16


def _said(parts: list[object]) -> str:
    console = Console(width=400, file=io.StringIO())
    for part in parts:
        console.print(part)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _modes() -> tuple[RampResult, RampResult]:
    """Two modes' ramps of the same steps: the file's (fell), and one whose last step served as long as its first."""
    fell = RampResult.from_dict(json.loads(FILE.read_text()))
    assert isinstance(fell.server, ServerSpec)
    first, last = fell.steps
    steady = dataclasses.replace(
        fell,
        server=dataclasses.replace(fell.server, mode="shards"),
        steps=[first, dataclasses.replace(last, wall_s=first.wall_s)],
    )
    return fell, steady


def test_a_mode_whose_last_step_served_less_is_not_further_out() -> None:
    fell, steady = _modes()
    for said in (_said(report_once([[fell, steady]])), _said(report([[fell, steady], [fell, steady]]))):
        assert "further out" not in said
        assert f"{fell.server.label}: every step held, but 16 in flight got 19/s, less than half the 98/s" in said
        assert "but a last step served under half what an earlier one did (above)" in said
    assert "(in 2/2 runs)" in _said(report([[fell, steady], [fell, steady]]))


def test_steady_modes_are_further_out_by_the_option_their_steps_were() -> None:
    _, steady = _modes()
    other = dataclasses.replace(steady, server=dataclasses.replace(steady.server, mode="threads"))
    said = _said(report_once([[steady, other]]))
    assert "the breaking points are further out (higher --concurrency-steps)" in said
    assert "--rates" not in said


def test_past_a_breaking_point_only_where_the_workers_were_busier() -> None:
    fell, _ = _modes()
    first, last = fell.steps
    said = served_less(fell)
    assert said is not None and "as past a breaking point" not in said
    assert "though its workers were no busier (9% of their CPUs, 9% at 4 in flight)" in said
    assert "its slowest request took 3.9 s, longer than the 1 s step" in said
    busy = dataclasses.replace(last, worker_cpu=(0.9, 0.9), max_us=400_000)
    said = served_less(dataclasses.replace(fell, steps=[first, busy]))
    assert said is not None and "more load was served less, as past a breaking point (a step holds" in said
    assert "no busier" not in said and "slowest" not in said


def test_a_mode_whose_last_step_did_not_hold_is_not_said_to_have_held() -> None:
    """'ramp --modes epoll,reuseport --rates 2000,8000 --work 200us --step 1s --backlog 64' (load 3.7, Linux 6.18,
    2 vCPUs): reuseport's 8000/s failed 154 (timeouts; its listeners dropped 1057 handshakes) and got 661/s of the
    2000/s step's 1995, and the report, after 'reuseport, did not hold: 154 failed', read 'reuseport: every step
    held, but 8000/s got 661/s, less than half ...'. A mode that broke has its knee said, not that line."""
    fell, steady = _modes()
    first, last = fell.steps
    broke = dataclasses.replace(fell, steps=[first, dataclasses.replace(last, reasons=("3 failed (3 × timeout)",))])
    for said in (_said(report_once([[broke, steady]])), _said(report([[broke, steady], [broke, steady]]))):
        assert f"{broke.server.label}, did not hold: 3 failed (3 × timeout)" in said, said
        assert f"{broke.server.label}: every step held" not in said, said
