"""merge does not match a file by pid against rows added by worker index from files whose pids differed.

736d4cd adds --target files whose replies named their worker's index ('worker I pid P') index by index whatever
their pids. Such a row then holds several processes' figures and names one pid (the first file's): a later file
numbered by pid ('worker PID', or a worker the server restarted mid-run) found a pid it held nowhere and put it on a
row of its own. C (a server's first start: only worker 1 answered, pid 401) + A (its next start: worker 0 pid 100
5 times, worker 1 pid 101 3 times) made rows 100: 5, 401: 7; with R (that next start again, worker 1 restarted:
100 x2, 101 x2, then 102 x3) worker 1 of that start was split over 401's row (A's 3) and a row 'pid 101: 2', while
pid 101 served 5. The witness is the replies the test server was told to give.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import assert_one_error_line, run_cli
from pid_replies import Replies, replies, target_file  # noqa: F401 - replies: the fixture


def _named(index: int, pid: int, times: int) -> list[int | str]:
    return [f"{index} pid {pid}"] * times  # the test server answers 'worker I pid P'


def test_rows_added_by_index_from_other_pids_are_not_matched_by_pid(replies: Replies, tmp_path: Path) -> None:  # noqa: F811 - the fixture imported above
    c = target_file(replies, tmp_path, "c.json", _named(1, 401, 4))
    a = target_file(replies, tmp_path, "a.json", _named(0, 100, 5) + _named(1, 101, 3))
    r = target_file(replies, tmp_path, "r.json", _named(0, 100, 2) + _named(1, 101, 2) + _named(1, 102, 3))
    rows_by = [json.loads(Path(p).read_text())["evidence"]["rows_by"] for p in (c, a, r)]
    assert rows_by == ["index", "index", "pid"]  # r: worker 1's index answered with another pid
    made = run_cli(["merge", c, a, "--json", str(tmp_path / "ca.json")])
    assert made.exit_code == 0, made.output
    ca = json.loads((tmp_path / "ca.json").read_text())
    assert ca["served"] == [5, 7]  # by index: 0 + 5, 4 + 3
    # a row of ca is 401 and 101 at once: r's 101 has no row of its own there, at once or after, either way round
    for files in ([c, a, r], [str(tmp_path / "ca.json"), r], [r, str(tmp_path / "ca.json")]):
        line = assert_one_error_line(run_cli(["merge", *files, "--json", str(tmp_path / "x.json")]), 1)
        assert "cannot be added worker by worker" in line and "several processes" in line, line
        assert not (tmp_path / "x.json").exists()
    # a merge keeps it: after a file no reply of which named a worker (its rows: none), and after an index file
    unnamed = str(Path(__file__).parent / "data" / "merge_target_unnamed.json")
    for first, then, name in ((unnamed, str(tmp_path / "ca.json"), "uca.json"), (c, a, "c_a.json")):
        made = run_cli(["merge", first, then, "--json", str(tmp_path / name)])
        assert made.exit_code == 0, made.output
        line = assert_one_error_line(run_cli(["merge", str(tmp_path / name), r, "--json", str(tmp_path / "x.json")]), 1)
        assert "several processes" in line, line
    # rows of one pid each still match by pid (a + r), and an index file still adds to ca by index
    assert run_cli(["merge", a, r, "--json", str(tmp_path / "ar.json")]).exit_code == 0
    assert json.loads((tmp_path / "ar.json").read_text())["served"] == [7, 5, 3]  # 100, 101, 102
    b = target_file(replies, tmp_path, "b.json", _named(0, 500, 1) + _named(1, 501, 2))
    made = run_cli(["merge", str(tmp_path / "ca.json"), b, "--json", str(tmp_path / "cab.json")])
    assert made.exit_code == 0, made.output
    assert json.loads((tmp_path / "cab.json").read_text())["served"] == [6, 9]
