"""A ramp or burst at a --target whose replies named no worker served them (c043737b: `unnamed`, on no row), so the
notes for a target that served nothing must not be said beside them.

Both reports asked 'served nothing?' of the rows alone (sum(served)): a ramp at a greeting line server with a few
timeouts read 'No connection got an answer: with --protocol line ...' under 1,939 served, and a burst at a plain
nginx with two bad replies 'The server answered, but no reply named a worker: --target attributes each connection by
its reply alone, which must read ...', a line before 'No reply named a worker ...: each counts as served'. Files from
real runs (ramp and burst --target at a plain nginx, `unnamed` 1,939 and 20) with those failures added.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"
REMOTE = {"mode": "remote", "server": "remote", "port": 27613}
SILENT = "No connection got an answer"
MUST_READ = "must read 'worker PID'"
COUNTED = "No reply named a worker"


def _saved(tmp_path: Path, name: str, change: Any) -> Path:
    data = json.loads((GOLDEN / f"{name}.json").read_text())
    change(data)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def _ramp(protocol: str, unnamed: int, errors: dict[str, int]) -> Any:
    def change(data: dict[str, Any]) -> None:
        data["server"].update(REMOTE, protocol=protocol)
        for step in data["steps"]:
            step["served"], step["errors"] = [0, 0], dict(errors)
            step.pop("unnamed", None)
            step.update({"unnamed": unnamed} if unnamed else {})

    return change


def _burst(unnamed: int, errors: dict[str, int]) -> Any:
    def change(data: dict[str, Any]) -> None:
        data["runs"] = data["runs"][:1]
        data["runs"][0]["server"].update(REMOTE, protocol="http")
        for cell in data["runs"][0]["cells"]:
            cell["served"], cell["errors"] = [0, 0], dict(errors)
            cell.update({"unnamed": unnamed} if unnamed else {})

    return change


def test_a_ramp_that_served_unnamed_replies_is_not_told_nothing_answered(tmp_path: Path) -> None:
    served = run_cli(["show", str(_saved(tmp_path, "ramp", _ramp("line", 1939, {"timeout": 3})))])
    assert served.exit_code == 0, served.output
    assert SILENT not in served.stdout and COUNTED in served.stdout
    unserved = run_cli(["show", str(_saved(tmp_path, "ramp", _ramp("line", 0, {"timeout": 3})))]).stdout
    assert SILENT in unserved  # the note still comes where nothing was served


def test_a_burst_that_served_unnamed_replies_is_not_told_what_a_reply_must_read(tmp_path: Path) -> None:
    served = run_cli(["show", str(_saved(tmp_path, "burst", _burst(20, {"bad reply": 2})))])
    assert served.exit_code == 0, served.output
    assert MUST_READ not in served.stdout and COUNTED in served.stdout
    unserved = run_cli(["show", str(_saved(tmp_path, "burst", _burst(0, {"bad reply": 20})))]).stdout
    assert MUST_READ in unserved
