"""merge adds a worker's rows to its own (results/merge_rows.py).

A server known by its replies (--target, replies 'worker PID') has its rows numbered in the order the pids first
answered (run) or in pid order (latency's placement). merge added rows index by index under the first file's
pids: a file in which a worker answered nothing had the others' rows shifted, and different workers' counts were
added together. Here a server of our own (tests/pid_replies.py)
names the pids it is told to, in order, and real `latency --target` runs (one connection at a time, one driver
process, so the replies come in that order) make the files.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import assert_one_error_line, run_cli
from pid_replies import Replies, replies, target_file  # noqa: F401 - replies: the fixture


def _rows(path: str) -> dict[int, int]:
    document = json.loads(Path(path).read_text())
    return {c["pid"]: document["served"][c["index"]] for c in document["counters"]}


def _merged(*paths: str, tmp_path: Path) -> dict[int, int]:
    out = tmp_path / "merged.json"
    merged = run_cli(["merge", *paths, "--concurrent", "--json", str(out)])
    assert merged.exit_code == 0, merged.output
    return _rows(str(out))


def test_a_worker_missing_from_one_file_shifts_no_row(replies: Replies, tmp_path: Path) -> None:  # noqa: F811 - the fixture imported above
    a = target_file(replies, tmp_path, "a.json", [111] * 9 + [222] * 6 + [333] * 5, workers=3)
    b = target_file(replies, tmp_path, "b.json", [333] * 12 + [222] * 8, workers=3)
    # the replies' pids are placed on rows in pid order: without 111, pid 222 is b's row 0 and 333 its row 1
    assert [c["pid"] for c in json.loads(Path(b).read_text())["counters"]] == [222, 333, 0]
    assert _rows(a) == {111: 9, 222: 6, 333: 5} and _rows(b) == {222: 8, 333: 12, 0: 0}
    # index by index, pid 111's row read 9 + 8 (pid 222's eight), 222's 6 + 12 and 333's 5
    assert _merged(a, b, tmp_path=tmp_path) == {111: 9, 222: 14, 333: 17}


def test_a_file_in_which_a_worker_answered_nothing(replies: Replies, tmp_path: Path) -> None:  # noqa: F811 - the fixture imported above
    a = target_file(replies, tmp_path, "a.json", [111] * 6 + [222] * 4)
    b = target_file(replies, tmp_path, "b.json", [222] * 10)
    assert _rows(b) == {222: 10, 0: 0}  # worker 111 answered nothing: its row is no reply's
    assert _merged(a, b, tmp_path=tmp_path) == {111: 6, 222: 14}
    # the other way round: the first file's unnamed row becomes pid 111's
    assert _merged(b, a, tmp_path=tmp_path) == {222: 14, 111: 6}


def test_files_that_share_no_worker_are_refused(replies: Replies, tmp_path: Path) -> None:  # noqa: F811 - the fixture imported above
    a = target_file(replies, tmp_path, "a.json", [111] * 5 + [222] * 5)
    b = target_file(replies, tmp_path, "b.json", [333] * 5 + [444] * 5)
    line = assert_one_error_line(run_cli(["merge", a, b]), 1, "cannot be added worker by worker")
    assert "share no worker's pid" in line, line


def test_a_worker_new_to_the_first_file_takes_a_row_of_its_own(replies: Replies, tmp_path: Path) -> None:  # noqa: F811 - the fixture imported above
    a = target_file(replies, tmp_path, "a.json", [111] * 4 + [222] * 6)
    b = target_file(replies, tmp_path, "b.json", [222] * 3 + [333] * 7)  # a worker replaced between the two
    c = target_file(replies, tmp_path, "c.json", [111] * 5 + [222] * 5)
    out = tmp_path / "merged.json"
    merged = run_cli(["merge", a, b, c, "--json", str(out)])
    assert merged.exit_code == 0, merged.output
    assert _rows(str(out)) == {111: 9, 222: 14, 333: 7}
    assert json.loads(out.read_text())["server"]["workers"] == 3  # as a file keeps workers that answered past -w


ATTACHED = [Path(__file__).parent / "data" / f"review_rd_uwsgi_masterless_attach{s}.json" for s in ("", "_2")]


def _attached(tmp_path: Path, pids: dict[int, int], reverse: bool) -> str:
    """The second real run attached to one uWSGI (served 83 and 58 by pids 20147 and 20148), its pids renamed by
    `pids` and, where `reverse`, its rows listed the other way round (as '--attach 20148,20147' lists them)."""
    document = json.loads(ATTACHED[1].read_text())
    rows = sorted(document["counters"], key=lambda c: c["index"])
    order = list(reversed(range(len(rows)))) if reverse else list(range(len(rows)))
    document["served"] = [document["served"][i] for i in order]
    document["counters"] = [
        rows[i] | {"index": at, "pid": pids.get(rows[i]["pid"], rows[i]["pid"])} for at, i in enumerate(order)
    ]
    path = tmp_path / "second.json"
    path.write_text(json.dumps(document))
    return str(path)


def test_one_attached_server_listed_in_another_order(tmp_path: Path) -> None:
    assert _rows(str(ATTACHED[0])) == {20147: 127, 20148: 43}
    second = _attached(tmp_path, {}, reverse=True)
    assert _rows(second) == {20147: 83, 20148: 58}
    assert _merged(str(ATTACHED[0]), second, tmp_path=tmp_path) == {20147: 210, 20148: 101}  # 185 and 126 by index


def test_launches_that_meet_a_pid_again_add_by_index(tmp_path: Path) -> None:
    """Two launches share no worker; one pid met again (after a wrap) is no match: the rows add by index as the
    tool numbers them, under the first file's pids (where a match on that one pid put the other on a third row)."""
    second = _attached(tmp_path, {20147: 99999}, reverse=True)
    assert _merged(str(ATTACHED[0]), second, tmp_path=tmp_path) == {20147: 127 + 58, 20148: 43 + 83}
