"""A merge of merged files counts every run it adds, and knows every measurement in it (results/merge_nested.py).

merged_from named the files of the last merge only: ab.json (a.json and b.json merged) merged with c.json said 2
files, so analysis/one_run.merged_runs read 2 runs where the histogram held 3 ('2 runs each, merged into one
histogram'), and merging it again beside b.json was not refused, though b's connections would be added twice.
Each entry now keeps its file's own merged_from; a file merged before that (entries without one) loads and counts
as it did.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from conftest import run_cli

from accept_order.analysis.one_run import merged_runs, runs_in
from accept_order.experiments.documents import load
from accept_order.results.merge_nested import KEPT_LEVELS

GOLDEN = Path(__file__).parent / "data" / "golden"


def _measured(tmp_path: Path, name: str, hour: int) -> str:
    """The golden latency-compare file as another measurement: its own start."""
    data: dict[str, Any] = json.loads((GOLDEN / "latency-compare.json").read_text())
    for run in data["runs"]:
        run["environment"] = {**run["environment"], "started_at": f"2026-11-23T{hour:02}:00:00+00:00"}
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def _merge(tmp_path: Path, name: str, *files: str, concurrent: bool = False) -> Any:
    out = tmp_path / name
    result = run_cli(["merge", *files, *(["--concurrent"] if concurrent else []), "--json", str(out)])
    assert result.exit_code == 0, result.output
    return str(out)


def _runs(path: str) -> int:
    _, document = load(path)
    return merged_runs(run["evidence"] for run in document["runs"])


def _pairs(tmp_path: Path, names: str) -> list[str]:
    """Each two letters of `names` (each one a measurement of its own hour) merged into one file: ab.json, cd.json."""
    files = [_measured(tmp_path, f"{x}.json", hour) for hour, x in enumerate(names, 10)]
    pairs = zip(files[::2], files[1::2], strict=True)
    return [_merge(tmp_path, f"{names[2 * i : 2 * i + 2]}.json", *pair) for i, pair in enumerate(pairs)]


def test_a_merge_of_merged_files_counts_every_run(tmp_path: Path) -> None:
    ab, cd, ef = _pairs(tmp_path, "abcdef")
    assert _runs(ab) == 2
    abcd = _merge(tmp_path, "abcd.json", ab, cd)
    assert _runs(abcd) == 4  # 2 before: the last merge's files only
    assert _runs(_merge(tmp_path, "abcdef.json", abcd, ef)) == 6  # 2 before
    assert run_cli(["show", abcd]).exit_code == 0


def test_old_merged_files_load_and_count_as_they_did(tmp_path: Path) -> None:
    abcd = Path(_merge(tmp_path, "abcd.json", *_pairs(tmp_path, "abcd")))
    document = json.loads(abcd.read_text())
    for run in document["runs"]:  # as a merge before this wrote it: no entry keeps its own merged_from
        for source in run["evidence"]["merged_from"]["files"]:
            source.pop("merged_from", None)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(document))
    assert _runs(str(old)) == 2
    shown = run_cli(["show", str(old)])
    assert shown.exit_code == 0, shown.output


def test_a_merge_holding_a_file_deep_down_is_refused_beside_another_merge_of_it(tmp_path: Path) -> None:
    ab, cd = _pairs(tmp_path, "abcd")
    be = _merge(tmp_path, "be.json", str(tmp_path / "b.json"), _measured(tmp_path, "e.json", 20))
    abcd = _merge(tmp_path, "abcd.json", ab, cd)
    again = run_cli(["merge", abcd, be, "--json", str(tmp_path / "twice.json")])
    assert again.exit_code == 1, again.output  # b's connections would be added twice
    assert "measurement (started 2026-11-23T11:00:00+00:00): merging would count it twice" in again.stderr  # b's
    assert not (tmp_path / "twice.json").exists()


def test_files_measured_at_once_are_as_many_runs_as_the_most_any_holds() -> None:
    one = {"file": "host1.json"}
    merged = {"file": "host2.json", "merged_from": {"files": [{"file": "x"}, {"file": "y"}], "concurrent": False}}
    assert runs_in({"files": [one, one], "concurrent": True}) == 1
    assert runs_in({"files": [one, merged], "concurrent": True}) == 2
    assert runs_in({"files": [one, merged], "concurrent": False}) == 3
    assert runs_in({"files": [one, {"file": "z", "merged_from": "not a merge"}]}) == 2  # a malformed entry: one


def test_a_nested_list_that_is_no_list_of_files_is_refused_in_one_line(tmp_path: Path) -> None:
    document = json.loads(Path(_merge(tmp_path, "abcd.json", *_pairs(tmp_path, "abcd"))).read_text())
    document["runs"][0]["evidence"]["merged_from"]["files"][0]["merged_from"]["files"] = "a.json b.json"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    shown = run_cli(["show", str(bad)])
    assert shown.exit_code == 1 and shown.stderr.count("\n") == 1, shown.output
    assert "merged_from.files[0].merged_from.files" in shown.stderr, shown.stderr


def test_a_merge_of_many_nested_merges_is_still_read_back(tmp_path: Path) -> None:
    """Each level nests the file 3 deeper: kept to merge_nested.KEPT_LEVELS levels, so that the file stays within
    what show reads (results/files.MAX_DEPTH), the deepest entries keeping the count of the runs they held."""
    letters = string.ascii_letters  # 26 pairs, each two measurements of their own: 25 merges, 75 levels deeper
    merged, *pairs = _pairs(tmp_path, letters)
    for level, pair in enumerate(pairs):
        merged = _merge(tmp_path, f"m{level}.json", merged, pair)
    shown = run_cli(["show", merged])
    assert shown.exit_code == 0, shown.output
    # 52 runs in all, those below KEPT_LEVELS too (counted one a file before: 34 of 40 for 20 pairs, 35 of 52 here)
    assert _runs(merged) == 2 * (len(pairs) + 1)
    deepest = json.loads(Path(merged).read_text())["runs"][0]["evidence"]["merged_from"]
    for _ in range(KEPT_LEVELS):  # down to the KEPT_LEVELS-th nested merged_from
        deepest = deepest["files"][0]["merged_from"]
    assert "merged_from" not in deepest["files"][0] and deepest["files"][0]["runs"] > 1, deepest  # the count kept


def test_a_merged_file_merges_with_a_file_from_before_in_flight(tmp_path: Path) -> None:
    """A merged file is written anew, with ServerSpec.in_flight; a file from before it (the golden ones: 0.2) has
    none, and 'merge ab.json c.json' read 'in_flight 0 vs None': not the same experiment."""
    (ab,) = _pairs(tmp_path, "ab")
    c = _measured(tmp_path, "c.json", 20)
    assert "in_flight" not in json.loads(Path(c).read_text())["runs"][0]["server"]  # the older file
    assert _runs(_merge(tmp_path, "abc.json", ab, c)) == 3


def test_a_running_total_refuses_any_of_its_days_again(tmp_path: Path) -> None:
    """A running total merged with each day's file (merge total.json day.json) nests one level a day: past
    KEPT_LEVELS the deepest entries dropped their files and, with them, their starts, so 13 of 31 days (the 2nd to
    the 14th) were merged into the total again without a word, their connections counted twice; their runs read 18
    of 31. The entry keeps the runs and the starts it dropped."""
    days = [_measured(tmp_path, f"d{k}.json", k) for k in range(24)]  # an hour each: the file's start
    total = days[0]
    for k, day in enumerate(days[1:], 1):
        total = _merge(tmp_path, f"total{k}.json", total, day)
    assert _runs(total) == len(days)
    for day in days:
        again = run_cli(["merge", total, day, "--json", str(tmp_path / "again.json")])
        assert again.exit_code == 1, (day, again.output)
        assert "merging would count it twice" in again.stderr, again.stderr
    assert not (tmp_path / "again.json").exists()
