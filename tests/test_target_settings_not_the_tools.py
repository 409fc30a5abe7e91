"""ramp and burst --target gave the tool's defaults as the server's settings: 'target 127.0.0.1:27613, 2 workers,
work 0 s, backlog 511' (nginx's own configuration, which this tool neither set nor can read), and their
pictures '2 workers, no work'. A server elsewhere is given its workers only; a server this tool started, all."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from accept_order.experiments.documents import plot_document

GOLDEN = Path(__file__).parent / "data" / "golden"
REMOTE = {"mode": "remote", "server": "remote", "protocol": "http", "port": 27613}


def _document(name: str, remote: bool) -> dict[str, Any]:
    data = json.loads((GOLDEN / f"{name}.json").read_text())
    servers = [data["server"]] if name == "ramp" else [run["server"] for run in data["runs"]]
    for server in servers:
        server.update(REMOTE if remote else {})
    return data


@pytest.mark.parametrize("name", ["ramp", "burst"])
def test_a_server_elsewhere_is_given_no_work_or_backlog(tmp_path: Path, name: str) -> None:
    for remote in (True, False):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(_document(name, remote)))
        settings = next(line for line in run_cli(["show", str(path)]).stdout.splitlines() if "2 workers" in line)
        assert ("backlog 511" in settings and "work 0" in settings) is not remote, settings


@pytest.mark.parametrize("name", ["ramp", "burst"])
def test_nor_its_picture(name: str) -> None:
    pytest.importorskip("matplotlib")
    for remote in (True, False):
        footer = plot_document(name, _document(name, remote))._supxlabel.get_text()
        assert bool(re.search(r"\bno work\b|\bwork \d", footer)) is not remote, footer


def test_a_ramp_at_a_server_elsewhere_does_not_explain_a_column_it_cannot_fill(tmp_path: Path) -> None:
    """Its 'workers CPU' column is all '-' (the server's processes are not seen from here), yet the legend said
    'workers CPU: the workers' CPU time over the step, ... per worker below' and no worker followed."""
    data = _document("ramp", remote=True)
    for step in data["steps"]:
        step["worker_cpu"] = []
    path = tmp_path / "ramp.json"
    path.write_text(json.dumps(data))
    assert "workers CPU:" not in run_cli(["show", str(path)]).stdout
    assert "workers CPU:" in run_cli(["show", str(GOLDEN / "ramp.json")]).stdout


def test_a_burst_elsewhere_does_not_say_it_cannot_tell_what_its_star_tells(tmp_path: Path) -> None:
    """burst --target marked 3000 clients '0.39 s *' (the load generator set the pace: from its own connect
    times) under a note that listed 'whether the client set the pace' among what it could not measure there.
    What it cannot tell is whether the client's CPU did (that needs the workers' CPU)."""
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(_document("burst", remote=True)))
    out = " ".join(run_cli(["show", str(path)]).stdout.split())
    assert "whether the client set the pace" not in out
    assert "whether the client's CPU set the pace (both need their CPU)" in out
