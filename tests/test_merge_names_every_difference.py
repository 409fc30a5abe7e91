"""merge names every setting that parts two files, what the server is first.

A builtin epoll latency file beside a launched HAProxy's (latency --server haproxy --pool) was refused with
'(run 1: server accept_batch 0 vs 64)': the first key in order, as if the cap were all that parted them, where
the server, its mode and its workers differed too. Now '(run 1: server: server 'builtin' vs 'haproxy', mode 'epoll'
vs 'threads', accept_batch 0 vs 64, workers 2 vs 4)'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import assert_one_error_line, run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "latency.json"


def another(data: dict[str, Any], **changed: Any) -> dict[str, Any]:
    """The golden run as another measurement (started later: merge refuses one measurement twice) with `changed`."""
    later = {**data["environment"], "started_at": "2026-11-23T19:00:00+00:00"}
    return {**data, "environment": later, **changed}


def test_every_difference_is_named_the_servers_kind_first(tmp_path: Path) -> None:
    data = json.loads(GOLDEN.read_text())
    server = data["server"]
    other = {**server, "server": "haproxy", "mode": "threads", "accept_batch": 64, "workers": server["workers"] + 2}
    path = tmp_path / "haproxy.json"
    path.write_text(json.dumps(another(data, server=other)))
    line = assert_one_error_line(run_cli(["merge", str(GOLDEN), str(path)]), 1, "is not the same experiment")
    said = (
        f"(run 1: server: server {server['server']!r} vs 'haproxy', mode {server['mode']!r} vs 'threads', "
        f"accept_batch {server['accept_batch']!r} vs 64, workers {server['workers']} vs {server['workers'] + 2})"
    )
    assert line.endswith(said), line


def test_one_difference_alone_is_named_alone(tmp_path: Path) -> None:
    data = json.loads(GOLDEN.read_text())
    path = tmp_path / "other.json"
    path.write_text(json.dumps(another(data, load={**data["load"], "concurrency": data["load"]["concurrency"] + 1})))
    line = assert_one_error_line(run_cli(["merge", str(GOLDEN), str(path)]), 1, "is not the same experiment")
    c = data["load"]["concurrency"]
    assert line.endswith(f"(run 1: load: concurrency {c} vs {c + 1})"), line


def test_the_server_and_the_load_are_both_named_where_both_differ(tmp_path: Path) -> None:
    """A built-in latency --pool --work 1ms file beside one without either was refused with '(run 1: server: work_us
    1000 vs 0)' alone, as if the work were all that parted them, where its concurrency and its kept connections
    differed too."""
    data = json.loads(GOLDEN.read_text())
    server, load = data["server"], data["load"]
    c = load["concurrency"]
    changed = another(data, server={**server, "work_us": 1000}, load={**load, "concurrency": c + 1})
    path = tmp_path / "other.json"
    path.write_text(json.dumps(changed))
    line = assert_one_error_line(run_cli(["merge", str(GOLDEN), str(path)]), 1, "is not the same experiment")
    said = f"(run 1: server: work_us {server['work_us']} vs 1000; load: concurrency {c} vs {c + 1})"
    assert line.endswith(said), line
