"""Review RH of d551837 (a stop in --modes/--repeat keeps what finished).

1. A burst that an error stopped after some of its sizes carried no mark (BurstRun had no `stopped`, and
   `interrupted` is a signal's): repeat/run.py's whole() took it for a finished run. In `burst --modes a,b
   --repeat 2` an error in b's run completed round 1 with it: '1 round (stopped by an error: the rounds that
   finished)', its medians from b's first size alone, and 'Round 2 of 2 measured nothing' of the round it cut.
2. The repeat file's new fields were checked one by one but not against each other: a file saying 1 round asked
   beside 2 rounds read 'one run of each, one after another' over medians 'in 2/2 runs'.
3. A sweep's cut round named its finished cap by the server's label and the rest by their caps."""

from __future__ import annotations

import copy
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from accept_order.core.errors import LoadError
from accept_order.experiments.burst import run as burst_run
from accept_order.probes.evidence import EvidenceCapture

GOLDEN = Path(__file__).parent / "data" / "golden"


@pytest.mark.parametrize(
    ("at", "rounds", "said"),
    [
        (4, 0, "Round 1 of 2, cut short: epoll finished; reuseport was stopped by the error during its run"),
        (8, 1, "Round 2 of 2, cut short: epoll finished; reuseport was stopped by the error during its run"),
    ],
    ids=["first-round", "last-round"],
)
def test_a_burst_an_error_cut_is_not_a_finished_run(
    at: int, rounds: int, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = burst_run.drive_load
    calls = [0]

    def drive(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == at:  # reuseport's second size: its first is kept
            raise LoadError("a driver died (on purpose)")
        return real(*args, **kwargs)

    monkeypatch.setattr(burst_run, "drive_load", drive)
    out = tmp_path / "b.json"
    args = ["burst", "--modes", "epoll,reuseport", "-w", "2", "--clients", "5,10", "--repeat", "2"]
    result = run_cli([*args, "--json", str(out)])
    assert result.exit_code == 1, result.output
    doc = json.loads(out.read_text())
    assert len(doc["rounds"]) == rounds, doc["rounds"]
    epoll, reuseport = doc["cut_round"]
    assert [len(epoll["cells"]), len(reuseport["cells"])] == [2, 1]
    assert "stopped" not in epoll and reuseport["stopped"] == "a driver died (on purpose)"
    for shown in (result.stdout, run_cli(["show", str(out)]).stdout):
        assert said in shown, shown
        assert "Round 2 of 2 measured nothing" not in shown


def _repeat(**changes: Any) -> dict[str, Any]:
    doc = json.loads((GOLDEN / "repeat.json").read_text())  # compare --repeat 2 of blocking and epoll
    return copy.deepcopy(doc) | changes


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        ({"interrupted": True, "rounds_asked": 1}, "rounds_asked: 1, fewer than the 2 rounds the file holds"),
        ({"rounds_asked": 1}, "rounds_asked: 1, fewer than the 2 rounds the file holds"),
        ({"interrupted": True, "variants": 1}, "variants: 1, but each round has 2 runs"),
        ({"cut_round": "first"}, "cut_round: a round cut short in a run neither interrupted nor stopped"),
        ({"interrupted": True, "rounds": [], "cut": 4, "variants": 2}, "cut_round: 4 runs, more than variants (2)"),
        ({"interrupted": True, "cut": 1, "rounds_asked": 2}, "rounds_asked: 2, fewer than the 3 rounds"),
    ],
)
def test_the_stops_fields_must_fit_the_rounds(changes: dict[str, Any], line: str, tmp_path: Path) -> None:
    doc = _repeat()
    first = doc["rounds"][0]
    if changes.pop("cut_round", None):
        changes["cut_round"] = first[:1]
    if "cut" in changes:
        changes["cut_round"] = (first * 2)[: changes.pop("cut")]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc | changes))
    for command in (["show"], ["show", "--format", "csv"], ["plot", "-o", str(tmp_path / "r.png")]):
        result = run_cli([*command, str(path)])
        assert result.exit_code == 1, result.output
        assert line in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_file_the_tool_writes_for_a_cut_run_still_loads(tmp_path: Path) -> None:
    doc = _repeat(interrupted=True, rounds_asked=3, variants=2)
    doc["cut_round"] = doc["rounds"][0][:1]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    assert "Round 3 of 3, cut short: blocking finished; epoll measured nothing" in result.stdout, result.stdout


def test_a_sweeps_cut_round_names_its_caps_as_a_whole_round_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep's runs share the server's label: a cut round of one run was named by it, the rest by their caps
    ('Round 2 of 2, cut short: epoll finished; 4 limit measured nothing')."""
    original = EvidenceCapture.before
    calls = [0]

    def before(self: EvidenceCapture) -> None:
        calls[0] += 1
        if calls[0] == 4:  # round 2's second cap starts: its first has finished
            signal.raise_signal(signal.SIGINT)
        original(self)

    monkeypatch.setattr(EvidenceCapture, "before", before)
    out = tmp_path / "s.json"
    args = ["sweep", "--accept-batch", "1,4", "-w", "2", "-n", "200", "-c", "4", "--repeat", "2", "--json", str(out)]
    result = run_cli(args)
    assert result.exit_code == 130, result.output
    for shown in (result.stdout, run_cli(["show", str(out)]).stdout):
        assert "Round 2 of 2, cut short: 1 limit finished; 4 limit measured nothing;" in shown, shown
