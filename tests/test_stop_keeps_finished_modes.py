"""What a stop in a run of several modes or rounds measured is kept and shown, and what it cut is said.

`ramp --modes epoll,reuseport` interrupted in reuseport's ramp saved nothing and showed nothing (exit 130): it is
one round of --repeat's machinery, and a round cut short was dropped whole. The round a stop cuts is now kept apart
(the file's cut_round): shown where no round finished, named and left out of the figures where some did. Signals
are raised by the command's own process at a chosen call (the start of a run, a ramp's step), so no timing is
needed. Also here: the wording faults found beside it (a --repeat cut after one round, the ramp's knee cell and
reasons, reload's footer, sweep's connections under way at a stop)."""

from __future__ import annotations

import dataclasses
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from test_repeat import text_of
from test_repeat_experiments import ramp

from accept_order import api
from accept_order.experiments.documents import render_document
from accept_order.experiments.ramp.repeated import broke_lines
from accept_order.probes.evidence import EvidenceCapture

GOLDEN = Path(__file__).parent / "data" / "golden"
STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


@pytest.fixture
def signal_at_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """signal_at_run(k, signum): `signum` is raised as the k-th run starts (its evidence is read first)."""
    original = EvidenceCapture.before
    plan: dict[str, int] = {}
    calls = [0]

    def before(self: EvidenceCapture) -> None:
        calls[0] += 1
        if calls[0] == plan.get("at"):
            signal.raise_signal(plan["signum"])
        original(self)

    monkeypatch.setattr(EvidenceCapture, "before", before)
    yield lambda at, signum: plan.update(at=at, signum=signum)


def test_ramp_modes_stopped_in_its_second_mode_keeps_and_shows_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = api.ramp
    calls = [0]

    def ramp_signalled(spec: Any, plan: Any, on_step: Any) -> Any:
        calls[0] += 1
        steps = [0]

        def step(offered: float) -> Any:
            steps[0] += 1
            if calls[0] == 2 and steps[0] == 2:  # reuseport's second step starts: its first is kept
                signal.raise_signal(signal.SIGINT)
            return on_step(offered)

        return real(spec, plan, step)

    monkeypatch.setattr(api, "ramp", ramp_signalled)
    out = tmp_path / "r.json"
    args = ["ramp", "--modes", "epoll,reuseport", "--concurrency-steps", "2,4", "--step", "200ms", "-w", "2"]
    result = run_cli([*args, "--json", str(out)])
    assert result.exit_code == 130, result.output
    doc = json.loads(out.read_text())
    assert doc["rounds"] == [] and doc["interrupted"] and doc["rounds_asked"] == 1, doc.keys()
    epoll, reuseport = doc["cut_round"]
    assert [s["offered"] for s in epoll["steps"]] == [2, 4] and not epoll["interrupted"]
    assert [s["offered"] for s in reuseport["steps"]] == [2] and reuseport["interrupted"]
    for shown in (result.stdout, run_cli(["show", str(out)]).stdout):
        assert shown.startswith("epoll\n") and "\nreuseport\n" in shown, shown  # each mode's steps
        assert "accept-order ramp --modes" in shown and "held to 2 in flight, then interrupted" in shown
        assert "Cut short: epoll finished; reuseport was interrupted during its run (the part it measured is " in shown
        assert "one run of each, one after another (interrupted);" in shown


@pytest.mark.parametrize("signum", list(STATUS))
def test_a_signal_in_the_first_round_keeps_the_variant_that_finished(
    signum: int, signal_at_run: Any, tmp_path: Path
) -> None:
    signal_at_run(2, signum)  # as epoll's run starts, blocking's has finished
    out = tmp_path / "c.json"
    result = run_cli(["compare", "--modes", "blocking,epoll", "-n", "3", "--repeat", "2", "--json", str(out)])
    assert result.exit_code == STATUS[signum], result.output
    doc = json.loads(out.read_text())
    assert doc["rounds"] == [] and [r["server"]["mode"] for r in doc["cut_round"]] == ["blocking"]
    assert (doc["rounds_asked"], doc["variants"]) == (2, 2)
    assert "blocking" in result.stdout and "no round finished (interrupted): the figures are those of round 1" in (
        result.stdout
    )
    assert "Round 1 of 2, cut short: blocking finished; 1 more variant measured nothing; round 2 did not run." in (
        result.stdout
    )


@pytest.mark.parametrize(
    ("at", "rounds", "cut", "said"),
    [
        (3, 1, [], "Round 2 of 2 measured nothing."),  # between the rounds
        (
            4,
            1,
            ["blocking"],  # the last run: the round's first variant is kept, apart from the whole round
            "Round 2 of 2, cut short: blocking finished; epoll measured nothing; these runs are kept in the file, "
            "left out of the figures above.",
        ),
    ],
)
def test_a_signal_between_rounds_or_in_the_last_says_what_it_cut(
    at: int, rounds: int, cut: list[str], said: str, signal_at_run: Any, tmp_path: Path
) -> None:
    signal_at_run(at, signal.SIGTERM)
    out = tmp_path / "c.json"
    result = run_cli(["compare", "--modes", "blocking,epoll", "-n", "3", "--repeat", "2", "--json", str(out)])
    assert result.exit_code == 143, result.output
    doc = json.loads(out.read_text())
    assert len(doc["rounds"]) == rounds and [r["server"]["mode"] for r in doc.get("cut_round", [])] == cut
    assert said in result.stdout, result.stdout
    assert "1 round (interrupted: the rounds that finished), the variants interleaved" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["burst", "--modes", "epoll,reuseport", "-w", "2", "--clients", "10"],
        ["reload", "--modes", "epoll,reuseport", "--how", "kill", "-w", "2", "-c", "2", "--duration", "200ms"],
    ],
    ids=["burst", "reload"],
)
def test_burst_and_reload_modes_say_the_modes_after_the_stop_never_ran(
    args: list[str], signal_at_run: Any, tmp_path: Path
) -> None:
    """Their tables showed the first mode alone, as if it were all that was asked for."""
    signal_at_run(2, signal.SIGINT)
    out = tmp_path / "r.json"
    result = run_cli([*args, "--json", str(out)])
    assert result.exit_code == 130, result.output
    assert len(json.loads(out.read_text())["runs"]) == 1
    assert "and no later variant ran." in result.stdout, result.stdout


def _repeat_ramp(rounds: int, **changes: Any) -> str:
    data = json.loads((GOLDEN / "repeat-ramp.json").read_text())
    data["rounds"] = data["rounds"][:rounds]
    return text_of(render_document("repeat", data | changes))


def test_a_repeat_cut_after_one_round_keeps_its_wording_in_the_table_and_the_footer() -> None:
    cut = _repeat_ramp(1, interrupted=True, rounds_asked=3)
    assert "accept-order ramp --repeat" in cut and "the knee over the runs" in cut, cut
    assert "1 round (interrupted: the rounds that finished), the variants interleaved" in cut
    assert "Round 2 of 3 measured nothing; round 3 did not run." in cut
    # a file from before rounds_asked: an interrupted round reads as --repeat's in both places too
    old = _repeat_ramp(1, interrupted=True)
    assert "accept-order ramp --repeat" in old and "1 round (interrupted: the rounds that finished)" in old
    once = _repeat_ramp(1)  # ramp --modes without --repeat, whole
    assert "accept-order ramp --modes" in once and "one run of each, one after another;" in once


def test_the_knee_of_some_runs_is_said_in_how_many_not_as_a_range_of_one() -> None:
    rounds = [[ramp("epoll", [True, False])], [ramp("epoll", [False])]]
    doc = {"of": "ramp", "rounds": [[r.to_dict() for r in row] for row in rounds], "machine": {}}
    shown = text_of(render_document("repeat", doc))
    row = next(line for line in shown.splitlines() if line.lstrip().startswith("epoll"))
    assert "500/s in 1/2; no step held in 1/2" in row and "(500-500)" not in row, row


def test_a_reason_in_the_singular_and_the_plural_is_one_reason() -> None:
    one, many = ramp("epoll", [True, False]), ramp("epoll", [True, False])
    seen = ("up to 1 connection waited in an accept queue", "up to 20 connections waited in an accept queue")
    runs = [
        dataclasses.replace(run, steps=(run.steps[0], dataclasses.replace(run.steps[1], seen=(said,))))
        for run, said in zip((one, many), seen, strict=True)
    ]
    (_, there) = [line.plain for line in broke_lines("epoll", runs)]
    assert there == "  epoll, there: up to 1-20 connections waited in an accept queue in 2/2", there


@pytest.mark.parametrize(("how", "told"), [("leave", "is told to leave"), ("kill", "is sent SIGKILL")])
def test_reloads_footer_says_when_the_worker_was_told_not_that_it_went(how: str, told: str) -> None:
    data = json.loads((GOLDEN / "reload.json").read_text())
    data["runs"] = data["runs"][:1]
    data["runs"][0].update(how=how, gone_s=None)  # still there after the wait: the verdict says it had not gone
    shown = text_of(render_document("reload", data))
    assert "had not gone" in shown and f"worker 0 {told} after 500 ms;" in shown, shown
    assert " goes after" not in shown


def test_sweep_says_the_connections_a_stop_found_under_way_apart_from_failures() -> None:
    data = json.loads((GOLDEN / "sweep.json").read_text())
    run = data["runs"][0]
    run.update(interrupted=True, errors={"aborted": 16})
    data["interrupted"] = True
    shown = text_of(render_document("sweep", data))
    assert "16 connections under way at the stop (aborted by it: neither failed nor served)" in shown, shown
    assert "× aborted" not in shown and "failed:" not in shown
