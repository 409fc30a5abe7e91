"""`atlas --repeat` stopped: the rows that finished are kept and shown, with what the stop cut (the round it came in,
the server and mode cut short, the rows that did not run), and the footer does not call every row a median of the
rounds asked. Measured with `atlas --server builtin --repeat 2` and SIGINT/SIGTERM/SIGHUP at runs 3, 13 and 20 of
24: each exited 130/143/129 with the finished rows saved and shown; before, they read 'Interrupted: the rows are
those that finished.' under 'median of 2 rounds' whatever the stop had cut."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.console import Console

from accept_order.core.spec import ServerSpec
from accept_order.experiments.atlas import run as atlas_run
from accept_order.experiments.atlas.report import atlas_report
from accept_order.experiments.atlas.result import ATLAS_SHAPE, AtlasResult, AtlasRow
from accept_order.experiments.session import RunInterrupted

SPECS = [ServerSpec(kind="builtin", mode=mode, workers=2) for mode in ("blocking", "epoll", "poll")]


def _stopped(monkeypatch: pytest.MonkeyPatch, at_call: int, whole: bool = False) -> AtlasResult:
    """run_atlas over three variants, two rounds, stopped at measure's `at_call`-th call (`whole`: after that
    row's measurements had finished, as run_latency's lifecycle keeps a load that ended before the signal)."""
    calls: list[ServerSpec] = []

    def measure(spec: ServerSpec, plan: Any, round_: int) -> AtlasRow:
        calls.append(spec)
        row = AtlasRow(spec.kind, spec.mode, f"--mode {spec.mode}", round_, served=(5, 5))
        if len(calls) == at_call:
            if whole:
                raise RunInterrupted([row], KeyboardInterrupt())
            raise KeyboardInterrupt
        return row

    monkeypatch.setattr(atlas_run, "variants", lambda plan: (SPECS, {}))
    monkeypatch.setattr(atlas_run, "measure", measure)
    with pytest.raises(RunInterrupted) as stop:
        atlas_run.run_atlas(atlas_run.AtlasPlan(servers=("builtin",), workers=2, repeat=2))
    (result,) = stop.value.results
    assert isinstance(result, AtlasResult)
    return result


def _text(result: AtlasResult) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(atlas_report(result))
    return console.export_text()


def _saved_and_read(result: AtlasResult) -> AtlasResult:
    doc = json.loads(json.dumps(result.to_dict()))
    ATLAS_SHAPE.check(doc, "$")
    return AtlasResult.from_dict(doc)


def test_stopped_in_the_first_round(monkeypatch: pytest.MonkeyPatch) -> None:
    result = _saved_and_read(_stopped(monkeypatch, at_call=2))
    assert [(r.mode, r.round) for r in result.rows] == [("blocking", 1)]
    assert (result.interrupted, result.cut, result.variants) == (True, "builtin epoll", 3)
    text = _text(result)
    assert (
        "Interrupted in round 1 of 2; builtin epoll was cut short (left out of round 1); 1 of 3 rows of round 1 "
        "finished; 1 did not run; round 2 did not run." in text
    ), text
    assert "median of the rounds each row finished (2 asked)" in text and "median of 2 rounds" not in text


def test_stopped_between_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The signal after round 1's last row had finished (its load whole): nothing cut short."""
    result = _saved_and_read(_stopped(monkeypatch, at_call=3, whole=True))
    assert [(r.mode, r.round) for r in result.rows] == [("blocking", 1), ("epoll", 1), ("poll", 1)]
    assert result.cut is None
    assert "Interrupted after round 1 of 2; round 2 did not run." in _text(result)


def test_stopped_in_the_last_round(monkeypatch: pytest.MonkeyPatch) -> None:
    result = _saved_and_read(_stopped(monkeypatch, at_call=5))
    assert [(r.mode, r.round) for r in result.rows] == [("blocking", 1), ("epoll", 1), ("poll", 1), ("blocking", 2)]
    text = _text(result)
    assert (
        "Interrupted in round 2 of 2; builtin epoll was cut short (left out of round 2); 1 of 3 rows of round 2 "
        "finished; 1 did not run; 2 rows show 1 round only." in text
    ), text
    assert all(row in text for row in ("blocking", "epoll", "poll"))  # every row of round 1 still shown


def test_a_whole_run_says_nothing_of_a_stop() -> None:
    rows = tuple(AtlasRow("builtin", "epoll", "--mode epoll", r, served=(5, 5)) for r in (1, 2))
    result = AtlasResult(rows, {"workers": 2, "repeat": 2}, None)
    assert "cut" not in result.to_dict() and "variants" not in result.to_dict()
    text = _text(result)
    assert "median of 2 rounds" in text and "Interrupted" not in text
