"""atlas's footer names a server of its own worker count once (experiments/atlas/report.py).

Where two modes of one server ran different numbers of workers, the footer listed the server once per number:
'3 workers each (caddy: 1, caddy: 2, their own number)'. Made from the real run's file
(tests/data/atlas_caddy_one.json, -w 3, Caddy's row served by 1) with a second Caddy row of two workers.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from conftest import run_cli

FILE = Path(__file__).parent / "data" / "atlas_caddy_one.json"


def footer(path: Path) -> str:
    shown = run_cli(["show", str(path)], columns=1000)
    assert shown.exit_code == 0, shown.output
    return next(line for line in shown.stdout.splitlines() if "each" in line and "idle order" in line)


def _with_second_caddy_row(tmp_path: Path, served: list[int]) -> Path:
    document = json.loads(FILE.read_text())
    (caddy,) = [row for row in document["rows"] if row["server"] == "caddy"]
    second = copy.deepcopy(caddy)
    second["mode"] = "reuseport"
    second["served"] = served
    document["rows"].insert(document["rows"].index(caddy) + 1, second)
    path = tmp_path / "atlas.json"
    path.write_text(json.dumps(document))
    return path


def test_two_modes_of_different_numbers_name_the_server_once(tmp_path: Path) -> None:
    path = _with_second_caddy_row(tmp_path, [150, 150])
    line = footer(path)
    assert line.startswith("3 workers each (caddy: 1 in netpoller, 2 in reuseport, its own number); idle"), line
    assert line.count("caddy") == 1, line


def test_two_modes_of_one_number_read_as_before(tmp_path: Path) -> None:
    line = footer(_with_second_caddy_row(tmp_path, [300]))
    assert line.startswith("3 workers each (caddy: 1, its own number); idle order"), line


def test_a_mode_of_the_workers_asked_for_is_not_named(tmp_path: Path) -> None:
    line = footer(_with_second_caddy_row(tmp_path, [100, 100, 100]))
    assert line.startswith("3 workers each (caddy: 1 in netpoller, its own number); idle order"), line
