"""merge kept the first file's server log (a launched server's witness) beside the replies of every file: two
`latency --server h2o --pool` runs, each agreeing with its own access log, merged into 'h2o access log disagrees:
requests per worker 181 177 199 188, the replies 266 280 296 282'. A log is one launch's: the merged load keeps
none (each file's check was said when it ran). Review RF: it keeps both, each file's rows named by the merged
workers."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

POOL = Path(__file__).parent / "data" / "first_hour_5_nginx_pool.json"  # latency --server nginx -w 2 --pool -c 4


def _file(tmp_path: Path, name: str) -> str:
    data = json.loads(POOL.read_text())
    data["environment"]["started_at"] = name  # another session's file, not a copy
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_one_file_s_log_agrees_with_its_replies(tmp_path: Path) -> None:
    shown = run_cli(["show", _file(tmp_path, "a")]).stdout
    assert "nginx access log: the same requests per worker (92 289)" in shown


def test_a_merged_load_checks_every_launch_s_log_against_every_reply(tmp_path: Path) -> None:
    # review RF: each file's log is kept, its rows named by the merged workers (first dropped whole: 277acec)
    out = tmp_path / "merged.json"
    run_cli(["merge", _file(tmp_path, "a"), _file(tmp_path, "b"), "--json", str(out)])
    assert len(json.loads(out.read_text())["evidence"]["witness"]["requests"]) == 2 * (92 + 289)
    shown = run_cli(["show", str(out)]).stdout
    assert "disagrees" not in shown
    assert "nginx access log: the same requests per worker (184 578) and the same connections per worker (2 6" in shown
