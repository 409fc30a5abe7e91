"""merge_rows (8709517, afd48a5, 1a3c54b): what else must follow a worker's row to its own.

Two real `latency --target` runs of kept connections (5 requests each) at a server that names a pid per
connection and closes each after 3 requests (tests/data/merge_target_closes_*.json): the first heard from pids
111 and 222, the second from 222 and 333, so the second's rows move (222: row 0 -> 1, 333: a new row 2).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).parent / "data"
CLOSES = [DATA / f"merge_target_closes_{s}.json" for s in ("a", "b")]


def _by_pid(document: dict[str, Any], values: list[int]) -> Counter[int]:
    pid_of = {c["index"]: c["pid"] for c in document["counters"]}
    return Counter({pid_of[i]: n for i, n in enumerate(values) if n})


def _merged(tmp_path: Path, *paths: Path) -> dict[str, Any]:
    out = tmp_path / "merged.json"
    merged = run_cli(["merge", *map(str, paths), "--json", str(out)])
    assert merged.exit_code == 0, merged.output
    return dict(json.loads(out.read_text()))


def test_the_servers_closes_follow_their_worker(tmp_path: Path) -> None:
    files = [json.loads(p.read_text()) for p in CLOSES]
    assert [[c["pid"] for c in f["counters"]] for f in files] == [[111, 222], [222, 333]]
    want = sum((_by_pid(f, f["server_closes"]["closed"]) for f in files), Counter())
    merged = _merged(tmp_path, *CLOSES)
    # added by index, pid 111 was credited with 222's closes and 222 with 333's
    assert _by_pid(merged, merged["server_closes"]["closed"]) == want
    assert sum(want.values()) == sum(merged["server_closes"]["closed"])


# Real `latency --target ... -w 2` runs, one connection at a time: a heard from 111 and 222, b from 222 and 333 (a
# worker replaced), c from 111 and 222, w3 from 111, 222 and 333 (kept under 3 workers: more answered than -w).
TARGET = {name: DATA / f"merge_target_{name}.json" for name in ("a", "b", "c", "w3")}


def _served(document: dict[str, Any]) -> Counter[int]:
    return _by_pid(document, document["served"])


def test_a_merge_that_heard_from_more_workers_merges_again(tmp_path: Path) -> None:
    files = {name: json.loads(path.read_text()) for name, path in TARGET.items()}
    assert [files[n]["server"]["workers"] for n in ("a", "b", "c", "w3")] == [2, 2, 2, 3]
    at_once = _merged(tmp_path, TARGET["a"], TARGET["b"], TARGET["c"])
    assert _served(at_once) == _served(files["a"]) + _served(files["b"]) + _served(files["c"])
    ab = tmp_path / "ab.json"
    ab.write_text(json.dumps(_merged(tmp_path, TARGET["a"], TARGET["b"])))  # 3 workers: 333 joined
    # refused as 'server workers 3 vs 2', though a, b and c at once merge
    assert _served(_merged(tmp_path, ab, TARGET["c"])) == _served(at_once)
    assert _served(_merged(tmp_path, TARGET["c"], ab)) == _served(at_once)
    # a file of one load that heard from 3 beside one that heard from 2, either way round
    both = _served(files["w3"]) + _served(files["a"])
    assert _served(_merged(tmp_path, TARGET["w3"], TARGET["a"])) == both
    assert _served(_merged(tmp_path, TARGET["a"], TARGET["w3"])) == both


def test_a_file_whose_replies_named_no_worker_adds_its_failures(tmp_path: Path) -> None:
    """A real run at a server whose replies name no worker ('hello': 20 x bad reply, every row pid 0) shares no
    pid with any file, yet has no worker's count to misplace: refused as 'the files share no worker's pid
    (another server, or one restarted)', which it is not."""
    unnamed = DATA / "merge_target_unnamed.json"
    document = json.loads(unnamed.read_text())
    assert {c["pid"] for c in document["counters"]} == {0} and document["errors"] == {"bad reply": 20}
    a = json.loads(TARGET["a"].read_text())
    for paths in ((TARGET["a"], unnamed), (unnamed, TARGET["a"])):
        merged = _merged(tmp_path, *paths)
        assert _served(merged) == _served(a) and merged["errors"] == {"bad reply": 20}
    assert _merged(tmp_path, unnamed, unnamed.with_name("merge_target_unnamed_copy.json"))["errors"] == {
        "bad reply": 40
    }


def test_a_target_merges_note_says_rows_add_by_pid(tmp_path: Path) -> None:
    """The merged report's note said every merge's rows add 'that worker index's figures ...; the pids ... are the
    first file's', false of a --target merge, whose rows are matched by pid and keep each worker's own."""
    merged = run_cli(["merge", str(TARGET["a"]), str(TARGET["b"])])
    assert merged.exit_code == 0, merged.output
    note = " ".join(merged.output.split())
    assert "each worker's row adds the figures of the pid it names from every file" in note, note
    assert "worker index" not in note and "the pids" not in note, note


def test_two_merges_of_one_file_are_refused(tmp_path: Path) -> None:
    """(a + b) beside (b + c): neither holds the other, both hold b, whose 40 connections were added twice
    (a + 2b + c: 140 where the three files hold 100), merged without a word."""
    ab, bc = tmp_path / "ab.json", tmp_path / "bc.json"
    ab.write_text(json.dumps(_merged(tmp_path, TARGET["a"], TARGET["b"])))
    bc.write_text(json.dumps(_merged(tmp_path, TARGET["b"], TARGET["c"])))
    line = assert_one_error_line(run_cli(["merge", str(ab), str(bc)]), 1, "merging would count it twice")
    assert "both hold one file's measurement" in line, line
    # a merge beside a file it does not hold still adds: (a + b) + c is a + b + c
    files = [json.loads(TARGET[n].read_text()) for n in ("a", "b", "c")]
    assert sum(_served(_merged(tmp_path, ab, TARGET["c"])).values()) == sum(sum(f["served"]) for f in files)


def test_merges_of_files_started_in_one_second_still_add(tmp_path: Path) -> None:
    """Client hosts started together (--concurrent) share a start but no driver: their merges add."""
    b, c = json.loads(TARGET["b"].read_text()), json.loads(TARGET["c"].read_text())
    c["environment"]["started_at"] = b["environment"]["started_at"]  # c started in b's second
    same_second = tmp_path / "c_in_b_second.json"
    same_second.write_text(json.dumps(c))
    ab = tmp_path / "ab.json"
    ab.write_text(json.dumps(_merged(tmp_path, TARGET["a"], TARGET["b"])))
    assert sum(_served(_merged(tmp_path, ab, same_second)).values()) == 30 + 40 + 30
