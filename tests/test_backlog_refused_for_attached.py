"""--backlog describes the listen() of a server this tool starts: with --attach (or --target) it was taken and
ignored, where --work, --workers, --pin and the rest are refused, and the result file kept it as the server's:
'latency --attach HAPROXY_PID --port 18087 --backlog 7' saved server.backlog 7 of a listener whose backlog was 4096
(its own report's 'Send-Q 4096 (from netlink)', ss -ltn the same)."""

from __future__ import annotations

import pytest
from conftest import assert_one_error_line, run_cli


@pytest.mark.parametrize("command", ["run", "latency"])
@pytest.mark.parametrize("where", [["--attach", "1", "--port", "80"], ["--target", "127.0.0.1:80"]])
def test_backlog_is_refused_for_a_server_this_tool_did_not_start(command: str, where: list[str]) -> None:
    which = where[0]
    line = assert_one_error_line(run_cli([command, *where, "--protocol", "http", "--backlog", "7"]), 2, "--backlog")
    assert f"--backlog describes a server this tool starts; not with {which}" in line, line
