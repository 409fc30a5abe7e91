"""A compare or herd stopped by Ctrl-C says so: the row it cut short is the connections until then (since
0.3 an interrupted mode's run is kept, not dropped), and the variants it never reached are not in the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def shown(tmp_path: Path, kind: str, interrupted: bool, cut: int | None) -> str:
    doc = json.loads((GOLDEN / f"{kind}.json").read_text())
    if interrupted:
        doc["interrupted"] = True
    if cut is not None:
        doc["runs"][cut]["interrupted"] = True
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize(
    ("kind", "cut", "line"),
    [
        ("compare", 2, "the reuseport row is the connections until then, and no later variant ran."),
        ("compare", None, "the rows are the runs that finished, and no later variant ran."),
        ("herd", 1, "the epoll row is the connections until then, and no later variant ran."),
    ],
)
def test_an_interrupted_run_of_several_says_which_row_is_partial(
    tmp_path: Path, kind: str, cut: int | None, line: str
) -> None:
    assert f"Stopped early: interrupted; {line}" in shown(tmp_path, kind, True, cut).splitlines()


@pytest.mark.parametrize("kind", ["compare", "herd"])
def test_a_finished_one_says_nothing_of_it(tmp_path: Path, kind: str) -> None:
    assert "Stopped early" not in shown(tmp_path, kind, False, None)
