"""Review RF of 277acec: merge dropped every file's server log (a launched server's witness), so a merged load of
two runs that each agreed with their own log said nothing of either, and one that disagreed was not said either.
Now the logs add: the added file's rows name its workers by the merged (first file's) pids, worker by worker as
the counters add, and its client ports are tagged with its start, so that a port both launches used (loopback
reuses them at once) is two connections where the log numbers none of its requests (h2o's: by client port)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

POOL = Path(__file__).parent / "data" / "first_hour_5_nginx_pool.json"  # latency --server nginx -w 2 --pool -c 4


def _file(tmp_path: Path, name: str, by_port: bool = False, **changes: Any) -> str:
    """Another launch's file: its own start and its own workers' pids (shifted, the log's rows as its counters)."""
    data = json.loads(POOL.read_text())
    data["environment"]["started_at"] = name
    shift = 1000 * (ord(name) - ord("a"))
    for counted in data["counters"]:
        counted["pid"] += shift
    witness = data["evidence"]["witness"]
    witness["requests"] = [[row[0] + shift, *row[1:]] for row in witness["requests"]]
    if by_port:  # a log that numbers no request on its connection: connections are told apart by client port
        witness.pop("numbered_by")
        witness["requests"] = [row[:2] for row in witness["requests"]]
    witness.update(changes)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return str(path)


def _merged(tmp_path: Path, *files: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / f"merged-{len(list(tmp_path.glob('merged-*')))}.json"
    done = run_cli(["merge", *files, "--json", str(out)])
    assert done.exit_code == 0, done.output
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0, shown.output
    return json.loads(out.read_text()), shown.stdout


def test_a_port_both_launches_used_is_two_connections(tmp_path: Path) -> None:
    one = run_cli(["show", _file(tmp_path, "a", by_port=True)]).stdout
    assert "the same connections per worker (1 3; connections by client port)" in one
    _, shown = _merged(tmp_path, _file(tmp_path, "a", by_port=True), _file(tmp_path, "b", by_port=True))
    assert "the same requests per worker (184 578) and the same connections per worker (2 6; connections by " in shown


def test_one_launch_s_missing_rows_are_said_of_the_merged_load(tmp_path: Path) -> None:
    short = Path(_file(tmp_path, "b"))
    data = json.loads(short.read_text())
    lost = data["evidence"]["witness"]["requests"].pop(0)  # its log lost a request of its worker 1
    assert lost[0] == data["counters"][1]["pid"]
    short.write_text(json.dumps(data))
    _, shown = _merged(tmp_path, _file(tmp_path, "a"), str(short))
    assert "nginx access log disagrees: requests per worker 184 577, the replies 184 578" in shown


def test_no_log_is_kept_where_the_files_logs_differ_in_source(tmp_path: Path) -> None:
    doc, shown = _merged(tmp_path, _file(tmp_path, "a"), _file(tmp_path, "b", source="apache access log"))
    assert "witness" not in doc["evidence"]
    assert "access log" not in shown


def test_no_log_is_kept_where_a_file_has_none(tmp_path: Path) -> None:
    bare = json.loads(POOL.read_text())
    bare["environment"]["started_at"] = "b"
    del bare["evidence"]["witness"]
    (tmp_path / "b.json").write_text(json.dumps(bare))
    for files in ((_file(tmp_path, "a"), str(tmp_path / "b.json")), (str(tmp_path / "b.json"), _file(tmp_path, "a"))):
        doc, shown = _merged(tmp_path, *files)
        assert "witness" not in doc["evidence"]
        assert "access log" not in shown
