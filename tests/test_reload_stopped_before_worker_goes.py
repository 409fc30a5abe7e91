"""reload stopped by Ctrl-C before the worker's time came said '3 workers, worker 0 goes never; ...', as if the
plan were to keep it. It says the run was stopped first."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "reload.json"


def _line(tmp_path: Path, interrupted: bool) -> str:
    data = json.loads(GOLDEN.read_text())
    data["runs"] = data["runs"][:1]
    data["runs"][0].update(at_s=None, gone_s=None, interrupted=interrupted)
    path = tmp_path / "reload.json"
    path.write_text(json.dumps(data))
    return next(line for line in run_cli(["show", str(path)]).stdout.splitlines() if " worker 0 is " in line)


def test_a_worker_that_did_not_go_because_of_the_stop_is_said_so(tmp_path: Path) -> None:
    assert "worker 0 is never told to leave (the run was stopped first);" in _line(tmp_path, interrupted=True)
    assert "worker 0 is never told to leave: the load ended first;" in _line(tmp_path, interrupted=False)
