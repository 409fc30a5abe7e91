"""merge says which file stopped early and why, not the first file's reason (or a signal's words) for all of them.

A merged run is interrupted where any file's was, and its evidence is the first file's. Measured here (serve --mode
blocking -w 2 attached; one latency --duration 1s that ran to its end, one whose worker 0 was SIGKILLed 1.27 s in):
merged after the whole one, the exit read 'Interrupted: the attached pid 15320 run was stopped after 1.12 s' (a
signal's words, of the added wall time); merged before it, 'Stopped early: attached worker 0 (pid 15327) exited 1.27
s into the run; the run stopped after 0 connections' stood for a load the other file had added to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"
EXITED = "attached worker 0 (pid 4242) exited 0.50 s into the run; the run stopped after 7 connections (7 served)"


def _file(tmp_path: Path, i: int, stop: str) -> str:
    """The golden latency file as another measurement, ended as `stop` says: whole, exited or signal."""
    data: dict[str, Any] = json.loads((GOLDEN / "latency.json").read_text())
    data["environment"] = {**data["environment"], "started_at": f"2026-11-23T1{i}:00:00+00:00"}
    if stop != "whole":
        data["interrupted"], data["wall_s"] = True, 0.5
    if stop == "exited":
        data["evidence"]["worker_exit"] = {"worker": 0, "pid": 4242, "after_s": 0.5, "why": EXITED}
    path = tmp_path / f"{i}.json"
    path.write_text(json.dumps(data))
    return str(path)


def merged(tmp_path: Path, *stops: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / "merged.json"
    paths = [_file(tmp_path, i, stop) for i, stop in enumerate(stops)]
    result = run_cli(["merge", *paths, "--json", str(out)], columns=2000)  # each note on one line
    assert result.exit_code == 0, result.output
    shown = run_cli(["show", str(out)], columns=2000)  # the file fits its shape, and reads as the merge said
    assert shown.exit_code == 0 and shown.stdout == result.stdout, shown.output
    return json.loads(out.read_text()), result.stdout


def _stops(document: dict[str, Any]) -> list[str | None]:
    return [f.get("stopped") for f in document["evidence"]["merged_from"]["files"]]


def test_a_worker_exit_in_the_second_file_is_said_of_it(tmp_path: Path) -> None:
    document, report = merged(tmp_path, "whole", "exited")
    assert _stops(document) == [None, EXITED]
    assert f"Stopped early in 1 of the 2 merged files ({tmp_path / '1.json'}: {EXITED}); its figures" in report, report
    assert "Interrupted: the" not in report


def test_a_worker_exit_in_the_first_file_is_not_the_merges(tmp_path: Path) -> None:
    _, report = merged(tmp_path, "exited", "whole")
    assert f"Stopped early in 1 of the 2 merged files ({tmp_path / '0.json'}: {EXITED}); its figures" in report, report
    assert "Stopped early: attached" not in report


def test_each_stopped_file_says_its_own(tmp_path: Path) -> None:
    document, report = merged(tmp_path, "signal", "whole", "exited")
    assert _stops(document) == ["interrupted after 0.50 s", None, EXITED]
    said = f"{tmp_path / '0.json'}: interrupted after 0.50 s; {tmp_path / '2.json'}: {EXITED}"
    assert f"Stopped early in 2 of the 3 merged files ({said})" in report, report


def test_files_that_ran_to_their_end_say_nothing_of_stops(tmp_path: Path) -> None:
    document, report = merged(tmp_path, "whole", "whole")
    assert _stops(document) == [None, None] and not document["interrupted"]
    assert "Stopped early" not in report and "Interrupted" not in report
