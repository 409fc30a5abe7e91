"""merge of --target files adds by the numbering their replies gave the rows (evidence.rows_by, results/merge_rows.py).

A built-in `accept-order serve` replies 'worker I pid P': its rows are its own worker indices, so two runs against
it, restarted between them (no pid shared), add index by index; 8709517 matched them by pid and refused them as
'numbers its workers in the order their pids first answered', which they are not. A server replying 'worker PID'
(tests/pid_replies.py, the tool's nginx handler's words) has its rows numbered by the tool, and they add by pid.
The witness for serve is its own tally (each worker's accepts, by index, in its --json), for the other the pids it
was told to name.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import assert_one_error_line, run_cli
from pid_replies import Replies, replies, target_file  # noqa: F401 - replies: the fixture
from serve_process import serving

WORKERS = 3


def _latency(port: int, path: Path) -> dict[str, Any]:
    """A real `latency --target` run at serve (two driver processes: their reply keys placed by the parent)."""
    args = ["latency", "--target", f"127.0.0.1:{port}", "-w", str(WORKERS), "-n", "150", "-c", "6"]
    made = run_cli([*args, "--driver-procs", "2", "--json", str(path)])
    assert made.exit_code == 0, made.output
    return dict(json.loads(path.read_text()))


def _run(port: int, path: Path, *protocol: str) -> Any:
    """The rows_by of a real `run --target` (one client process: LearnedAttribution, not the drivers' reply keys)."""
    made = run_cli(["run", "--target", f"127.0.0.1:{port}", *protocol, "-w", "2", "-n", "6", "--json", str(path)])
    assert made.exit_code == 0, made.output
    return json.loads(path.read_text())["evidence"].get("rows_by")


def _merge(tmp_path: Path, *paths: Path | str) -> Any:
    return run_cli(["merge", *map(str, paths), "--json", str(tmp_path / "merged.json")])


def _merged(tmp_path: Path, *paths: Path | str) -> dict[str, Any]:
    merged = _merge(tmp_path, *paths)
    assert merged.exit_code == 0, merged.output
    return dict(json.loads((tmp_path / "merged.json").read_text()))


def _per_worker(served: list[int]) -> list[int]:
    return [served[i] if i < len(served) else 0 for i in range(WORKERS)]


def _without_rows_by(path: Path) -> Path:
    """The file as one written before rows_by was: the same run, the field left out."""
    document = json.loads(path.read_text())
    assert document["evidence"].pop("rows_by") is not None
    old = path.with_name(f"old_{path.name}")
    old.write_text(json.dumps(document))
    return old


def test_serve_restarted_between_runs_adds_by_its_own_worker_index(tmp_path: Path) -> None:
    runs, tallies = [], []
    for n in range(3):  # three starts of one server: no pid is shared between any two runs
        with serving(tmp_path / f"tally{n}.json", WORKERS) as serve:
            runs.append(_latency(serve.port, tmp_path / f"run{n}.json"))
            tallies.append(serve.tally())
            assert [c["pid"] for c in runs[-1]["counters"]] == serve.pids
    pids = [{c["pid"] for c in run["counters"]} for run in runs]
    assert not (pids[0] & pids[1] or pids[1] & pids[2] or pids[0] & pids[2])
    for run, tally in zip(runs, tallies, strict=True):
        assert run["evidence"]["rows_by"] == "index"
        assert _per_worker(run["served"]) == tally  # each file's rows are the server's own count, index by index
    merged = _merged(tmp_path, tmp_path / "run0.json", tmp_path / "run1.json")  # refused since 8709517
    assert _per_worker(merged["served"]) == [a + b for a, b in zip(tallies[0], tallies[1], strict=True)]
    assert merged["evidence"]["rows_by"] == "index"
    # the note names each file's path and title (its port: the titles differ), so at 200 columns it wraps where the
    # tmp path's length puts the break: xdist's popen-gwN/ put it inside 'replies named'. Read as one line.
    said = " ".join(run_cli(["show", str(tmp_path / "merged.json")]).stdout.split())
    assert "the worker index the replies named" in said
    # the merge, merged again with the third start: still by index
    (tmp_path / "run01.json").write_text(json.dumps(merged))
    again = _merged(tmp_path, tmp_path / "run01.json", tmp_path / "run2.json")
    assert _per_worker(again["served"]) == [sum(column) for column in zip(*tallies, strict=True)]


def test_files_that_do_not_say_their_numbering_are_refused_saying_so(tmp_path: Path) -> None:
    """Runs as files written before rows_by (the field left out): which numbering their replies used cannot be
    told, so today's rule (by pid) holds, and its refusal says why in words true of either numbering."""
    with serving(tmp_path / "tally0.json", WORKERS) as serve:
        _latency(serve.port, tmp_path / "run0.json")
        _latency(serve.port, tmp_path / "again0.json")  # the same server, its pids again
        assert _run(serve.port, tmp_path / "run.json") == "index"  # run's one client learns them as they come
    with serving(tmp_path / "tally1.json", WORKERS) as serve:
        _latency(serve.port, tmp_path / "run1.json")
    old = [_without_rows_by(tmp_path / name) for name in ("run0.json", "run1.json", "again0.json")]
    line = assert_one_error_line(_merge(tmp_path, *old[:2]), 1, "cannot be added worker by worker", "not recorded in")
    assert "share no worker's pid" in line and f"{old[1]} nor in the files before it" in line, line
    # one of the two without it is enough not to know
    line = assert_one_error_line(_merge(tmp_path, tmp_path / "run0.json", old[1]), 1, "not recorded in")
    assert "nor in" not in line, line
    # a merge of a file that says and one that does not (one server: by pid) does not say either
    merged = _merged(tmp_path, tmp_path / "run0.json", old[2])
    assert "rows_by" not in merged["evidence"]
    (tmp_path / "half_old.json").write_text(json.dumps(merged))
    line = assert_one_error_line(
        _merge(tmp_path, tmp_path / "half_old.json", tmp_path / "run1.json"), 1, "not recorded"
    )
    assert "not recorded in the files before it" in line, line


def test_replies_naming_a_pid_alone_add_by_pid(replies: Replies, tmp_path: Path) -> None:  # noqa: F811 - the fixture imported above
    a = Path(target_file(replies, tmp_path, "a.json", [111] * 6 + [222] * 4))
    b = Path(target_file(replies, tmp_path, "b.json", [222] * 10))  # 111 answered nothing: 222 on row 0
    documents = [json.loads(p.read_text()) for p in (a, b)]
    assert [d["evidence"]["rows_by"] for d in documents] == ["pid", "pid"]
    assert [c["pid"] for c in documents[1]["counters"]] == [222, 0]
    merged = _merged(tmp_path, a, b)
    by_pid = Counter({c["pid"]: merged["served"][c["index"]] for c in merged["counters"]})
    assert by_pid == Counter({111: 6, 222: 14})  # by index: 111's row 6 + 10, 222's 4
    assert merged["evidence"]["rows_by"] == "pid"
    replies.pids = [111, 222, 111, 222, 111, 222]
    assert _run(replies.port, tmp_path / "run.json", "--protocol", "http") == "pid"
    # no pid shared: refused, saying the rows are the pids' (not that the numbering is unknown)
    c = target_file(replies, tmp_path, "c.json", [333] * 5 + [444] * 5)
    line = assert_one_error_line(_merge(tmp_path, a, c), 1, "cannot be added worker by worker")
    assert "numbered by the pids the replies named" in line and "not recorded" not in line, line
