"""A result file's accept gaps (evidence accept_counts.gaps, 0528be4) and busy looks' seconds (busy_waits' workers:
threads_end, looked_s, busy_s, slept_s) are checked as the file is read: unchecked, 'merge' of a file whose gaps held
a string ended in a TypeError's traceback (merge adds the gaps bucket by bucket), and a busy look's seconds of the
wrong kind were read as a file from before them. Now one line naming the field, exit 1; files without them (before
them) read as before, and gaps that fit are added."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from cli_runs import run_cli

DATA = Path(__file__).parent / "data"
FILE, SECOND = DATA / "review_rd_uwsgi_masterless_attach.json", DATA / "review_rd_uwsgi_masterless_attach_2.json"


def _written(folder: Path, name: str, document: dict[str, Any]) -> str:
    path = folder / name
    path.write_text(json.dumps(document))
    return str(path)


def _with_gaps(path: Path, gaps: Any) -> dict[str, Any]:
    document = json.loads(path.read_text())
    document["evidence"]["accept_counts"]["gaps"] = gaps
    return document


def test_gaps_that_fit_are_added_and_files_before_them_merge(tmp_path: Path) -> None:
    first = _written(tmp_path, "a.json", _with_gaps(FILE, {"114": 3, "200": 1}))
    second = _written(tmp_path, "b.json", _with_gaps(SECOND, {"114": 2}))
    out = tmp_path / "merged.json"
    result = run_cli(["merge", first, second, "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["evidence"]["accept_counts"]["gaps"] == {"114": 5, "200": 1}
    before = tmp_path / "before.json"  # the second without gaps, as a file from before them: none kept
    result = run_cli(["merge", first, str(SECOND), "--json", str(before)])
    assert result.exit_code == 0, result.output
    assert "gaps" not in json.loads(before.read_text())["evidence"]["accept_counts"]


@pytest.mark.parametrize("gaps", [{"114": "3"}, {"114": None}, {"114": -1}, {"114": True}, [3]])
def test_gaps_not_counts_are_one_line(tmp_path: Path, gaps: Any) -> None:
    first = _written(tmp_path, "a.json", _with_gaps(FILE, {"114": 3}))
    hostile = _written(tmp_path, "b.json", _with_gaps(SECOND, gaps))
    for args in (["merge", first, hostile, "--json", str(tmp_path / "merged.json")], ["show", hostile]):
        result = run_cli(args)
        assert result.exit_code == 1, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "evidence.accept_counts.gaps" in lines[0], result.stderr
        assert "Traceback" not in result.output, result.output


@pytest.mark.parametrize(
    ("field", "value"), [("busy_s", "0.5"), ("slept_s", -1.0), ("looked_s", None), ("threads_end", 1.5)]
)
def test_busy_looks_seconds_not_numbers_are_one_line(tmp_path: Path, field: str, value: Any) -> None:
    document = copy.deepcopy(json.loads(FILE.read_text()))
    worker = {"pid": 20147, "threads": 1, "looks": 10, "idle": 5, "waits": {}, "looked_s": 1.0, "busy_s": 0.5}
    document["evidence"]["busy_waits"] = {"span_s": 1.0, "workers": [{**worker, "slept_s": 0.0, field: value}]}
    result = run_cli(["show", _written(tmp_path, "a.json", document)])
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"evidence.busy_waits.workers[0].{field}" in lines[0], result.stderr
