"""Review R11 of merge_rows (8709517, afd48a5, 1a3c54b): what else must follow a worker's row to its own.

Two real `latency --target` runs of kept connections (5 requests each) at a server that names a pid per
connection and closes each after 3 requests (tests/data/merge_target_closes_*.json): the first heard from pids
111 and 222, the second from 222 and 333, so the second's rows move (222: row 0 -> 1, 333: a new row 2).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from conftest import run_cli

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
