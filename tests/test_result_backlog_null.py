"""A result file's `backlog: null` is an attached or remote server's (one this tool did not start, which gave listen()
no backlog of the tool's): the tool never writes it for a server it starts, and the schema accepted it there, so a
hand-edited file of nginx or the built-in workers said nothing was wrong. It is refused in one line naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).parent / "data"


def _with_null_backlog(tmp_path: Path, name: str) -> tuple[Path, dict[str, Any]]:
    """A copy of a stored file whose every server holds backlog null, and its first server as stored."""
    doc = json.loads((DATA / name).read_text())
    servers = [doc["server"]] if "server" in doc else [run["server"] for run in doc["runs"]]
    first = dict(servers[0])
    for server in servers:
        server["backlog"] = None
    path = tmp_path / Path(name).name
    path.write_text(json.dumps(doc))
    return path, first


@pytest.mark.parametrize(
    ("name", "at"),
    [
        ("golden/run.json", "server.backlog"),  # the built-in workers
        ("first_hour_5_nginx_pool.json", "server.backlog"),  # a launched server
        ("burst_io_uring_500.json", "runs[0].server.backlog"),  # a server inside a run of several
    ],
)
def test_a_server_this_tool_starts_may_not_have_a_null_backlog(tmp_path: Path, name: str, at: str) -> None:
    path, server = _with_null_backlog(tmp_path, name)
    assert server["backlog"] == 511 and server["server"] not in ("attached", "remote")
    assert_one_error_line(run_cli(["show", str(path)]), 1, at, "is null", "a server this tool starts")


@pytest.mark.parametrize(
    ("name", "kind"),
    [("latency_attach_io_uring.json", "attached"), ("merge_target_a.json", "remote")],  # --attach, --target
)
def test_a_server_this_tool_did_not_start_may_have_none(tmp_path: Path, name: str, kind: str) -> None:
    path, server = _with_null_backlog(tmp_path, name)
    assert server["server"] == kind
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0, shown.output
