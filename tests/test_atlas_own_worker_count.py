"""atlas's footer said '3 workers each' over a table whose Caddy row ran one (Caddy is one process, whatever -w
says): its 'top 100%' beside 'jain 1.00' read as one of three workers taking everything. A real run's file
(tests/data/atlas_caddy_one.json: Puma, lighttpd, Caddy and uvicorn, -w 3; Caddy's row served by 1) says
Caddy's own number now; a file whose every row ran the workers asked for says nothing more."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

FILE = Path(__file__).parent / "data" / "atlas_caddy_one.json"


def footer(path: Path) -> str:
    out = run_cli(["show", str(path)]).stdout
    return next(line for line in out.splitlines() if "each" in line and "idle order" in line)


def test_a_server_of_its_own_worker_count_is_named() -> None:
    assert footer(FILE).startswith("3 workers each (caddy: 1, its own number); idle order"), footer(FILE)


def test_rows_of_the_workers_asked_for_add_nothing(tmp_path: Path) -> None:
    document = json.loads(FILE.read_text())
    document["rows"] = [row for row in document["rows"] if row["server"] != "caddy"]
    path = tmp_path / "atlas.json"
    path.write_text(json.dumps(document))
    assert footer(path).startswith("3 workers each; idle order"), footer(path)
