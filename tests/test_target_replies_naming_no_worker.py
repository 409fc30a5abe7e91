"""ramp and burst --target at a server whose replies name no worker (nginx's 'hello from PID' page):
'ramp --target 127.0.0.1:P --protocol http' said only 'Knee: no step held; the first that did not was 500/s:
500 failed (bad reply 500)' and burst '0.04 s (200 failed)', as if the server had failed every connection,
where latency says the server answered and what a reply must read. Both say it now (saved files, in-process)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"
REMOTE = {"mode": "remote", "server": "remote", "protocol": "http", "port": 27613}
SAYS = "no reply named a worker"


def _saved(tmp_path: Path, name: str, change: Any) -> Path:
    data = json.loads((GOLDEN / f"{name}.json").read_text())
    change(data)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def _ramp(errors: dict[str, int], served: int = 0) -> Any:
    def change(data: dict[str, Any]) -> None:
        data["server"].update(REMOTE)
        for step in data["steps"]:
            step["served"], step["errors"] = [served, 0], dict(errors)

    return change


def _burst(errors: dict[str, int]) -> Any:
    def change(data: dict[str, Any]) -> None:
        data["runs"] = data["runs"][:1]
        data["runs"][0]["server"].update(REMOTE)
        for cell in data["runs"][0]["cells"]:
            cell["served"], cell["errors"] = [0, 0], dict(errors)

    return change


def test_ramp_says_the_replies_named_no_worker(tmp_path: Path) -> None:
    out = run_cli(["show", str(_saved(tmp_path, "ramp", _ramp({"bad reply": 16}))), "--format", "text"]).stdout
    assert SAYS in out and "'worker PID'" in out


def test_ramp_that_served_or_timed_out_says_nothing_of_replies(tmp_path: Path) -> None:
    served = run_cli(["show", str(_saved(tmp_path, "ramp", _ramp({"bad reply": 3}, served=13)))]).stdout
    timed_out = run_cli(["show", str(_saved(tmp_path, "ramp", _ramp({"timeout": 16})))]).stdout
    assert SAYS not in served and SAYS not in timed_out


def test_a_line_client_timed_out_at_a_server_elsewhere_is_told_of_protocol_http(tmp_path: Path) -> None:
    """'burst --target 127.0.0.1:P' at nginx (--protocol line, the default): every client timed out, said as
    '1.01 s (20 failed)' and nothing more, where run says the server waits for a request."""

    def line(data: dict[str, Any]) -> None:
        _burst({"timeout": 20})(data)
        data["runs"][0]["server"]["protocol"] = "line"

    out = run_cli(["show", str(_saved(tmp_path, "burst", line))]).stdout
    assert "needs --protocol http" in out
    http = run_cli(["show", str(_saved(tmp_path, "burst", _burst({"timeout": 20})))]).stdout
    assert "needs --protocol http" not in http  # an HTTP client that timed out met something else


def test_burst_says_the_replies_named_no_worker(tmp_path: Path) -> None:
    out = run_cli(["show", str(_saved(tmp_path, "burst", _burst({"bad reply": 20})))]).stdout
    assert "failed bad reply 20" in out
    assert SAYS in out
    refused = run_cli(["show", str(_saved(tmp_path, "burst", _burst({"ECONNREFUSED": 20})))]).stdout
    assert SAYS not in refused


def test_a_server_this_tool_started_is_never_told_so(tmp_path: Path) -> None:
    def builtin(data: dict[str, Any]) -> None:
        for step in data["steps"]:
            step["served"], step["errors"] = [0, 0], {"bad reply": 16}

    out = run_cli(["show", str(_saved(tmp_path, "ramp", builtin))]).stdout
    assert SAYS not in out
