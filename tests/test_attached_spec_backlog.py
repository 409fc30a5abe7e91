"""An attached server's saved settings are what was read of it, not the tool's defaults.

'latency --attach' of nginx at 'listen 127.0.0.1:PORT backlog=64' saved server.backlog 511 (the tool's default, never
given to that listen()) beside policy 'round-robin', mutex_delay_ms 500 and maxconn 0, settings nobody chose for it;
ss -ltn read Send-Q 64. A spec now holds the listeners' backlogs as the kernel had them (inet_diag's idiag_wqueue,
ss's Send-Q) and none of those defaults; an older file still reads, its 511 read as not known, and merges with a newer
file of the same server."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli
from nginx_by_hand import nginx_by_hand

from accept_order.core.spec import ServerSpec
from accept_order.servers.attached_backlogs import listener_backlogs

DATA = Path(__file__).parent / "data"
OLD_FILE = DATA / "latency_attach_io_uring.json"  # saved before: server.backlog 511, policy, mutex_delay_ms, maxconn
START_TIMEOUT_S = 20.0
NOBODY_CHOSE = ("backlog", "policy", "mutex_delay_ms", "maxconn")

CONF = """daemon off;
worker_processes {workers};
pid {d}/nginx.pid;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/cb; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;
    uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;
    server {{ listen 127.0.0.1:{port} backlog=64; location / {{ return 200 "hi\\n"; }} }}
}}
"""


def send_q(port: int) -> list[int]:
    """ss's own reading (iproute2, the witness): each listener's Send-Q on `port`, its backlog."""
    ss = shutil.which("ss")
    if ss is None:
        pytest.skip("needs ss (iproute2) as the witness")
    lines = subprocess.run([ss, "-Hltn", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    return [int(line.split()[2]) for line in lines.splitlines() if line.strip()]


@pytest.mark.parametrize("command", ["latency", "run"])
def test_an_attached_nginx_is_saved_with_its_own_backlog(command: str, free_port: int, tmp_path: Path) -> None:
    with nginx_by_hand(CONF, free_port, 2, START_TIMEOUT_S) as nginx:
        assert send_q(free_port) == [64]  # the witness: the kernel holds what the config asked
        out = tmp_path / "attached.json"
        args = [command, "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http", "-n", "10"]
        result = run_cli([*args, "--json", str(out)])
        assert result.exit_code == 0, result.output
        assert nginx.access_log.read_text().count('"GET ') >= 10  # it was this nginx that served them
    server = json.loads(out.read_text())["server"]
    assert server["backlogs"] == [64], server
    assert not set(NOBODY_CHOSE) & set(server), server  # the tool's defaults are not said to be its
    assert ServerSpec.from_dict(server).known_backlogs == (64,)
    shown = run_cli(["show", str(out)])
    # the tool's default backlog as a number of its own (a pid such as 13511 holds the digits: CI read one)
    said_511 = re.search(r"(?<![\d.])511(?![\d.])", shown.output)
    assert shown.exit_code == 0 and said_511 is None and "Send-Q 64" in shown.output, shown.output


def test_listeners_that_differ_are_each_saved() -> None:
    """Two SO_REUSEPORT listeners of the test's own on one port, listen(8) and listen(16): each is read, sorted."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(2)]
    try:
        for sock in socks:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        socks[0].bind(("127.0.0.1", 0))
        port = socks[0].getsockname()[1]
        socks[1].bind(("127.0.0.1", port))
        socks[0].listen(16)
        socks[1].listen(8)
        assert sorted(send_q(port)) == [8, 16]  # the witness
        assert listener_backlogs("127.0.0.1", port, []) == (8, 16)
    finally:
        for sock in socks:
            sock.close()


def test_a_target_saves_no_backlog() -> None:
    spec = ServerSpec(kind="remote", mode="remote", host="192.0.2.1", port=80)
    assert spec.backlog is None and spec.known_backlogs == ()
    assert not set(NOBODY_CHOSE) & set(spec.to_dict())


def _old() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(OLD_FILE.read_text())
    return doc


def test_an_older_file_still_reads_and_says_nothing_of_its_511(tmp_path: Path) -> None:
    doc = _old()
    assert doc["server"]["backlog"] == 511 and "backlogs" not in doc["server"]  # as it was saved
    spec = ServerSpec.from_dict(doc["server"])
    assert spec.backlog is None and spec.known_backlogs == ()  # the tool's default, not the server's: not known
    shown = run_cli(["show", str(OLD_FILE)])
    assert shown.exit_code == 0, shown.output
    assert "backlog" not in shown.output.lower(), shown.output  # its evidence's Send-Q 511 is what it read
    for table in ("workers", "histogram"):
        exported = run_cli(["show", str(OLD_FILE), "--format", "csv", "--table", table])
        assert exported.exit_code == 0 and exported.stdout.startswith("run,"), exported.output


def _newer(tmp_path: Path, name: str, backlogs: list[int], second: int = 52) -> Path:
    """The older file's run as a newer version saves it (its server's listeners read), started `second` later."""
    doc = _old()
    server = {k: v for k, v in doc["server"].items() if k not in NOBODY_CHOSE}
    doc["server"] = {**server, "backlogs": backlogs}
    doc["environment"]["started_at"] = f"2026-11-28T02:50:{second}+00:00"
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_an_older_and_a_newer_file_of_one_attached_server_merge(tmp_path: Path) -> None:
    newer = _newer(tmp_path, "newer.json", [64])
    merged = tmp_path / "merged.json"
    result = run_cli(["merge", str(OLD_FILE), str(newer), "--json", str(merged)])
    assert result.exit_code == 0, result.output
    assert "backlog" not in json.loads(merged.read_text())["server"]


def test_two_files_that_read_different_backlogs_are_not_one_experiment(tmp_path: Path) -> None:
    a, b = _newer(tmp_path, "a.json", [64]), _newer(tmp_path, "b.json", [128], second=53)
    line = assert_one_error_line(run_cli(["merge", str(a), str(b), "--json", str(tmp_path / "m.json")]), 1, "backlogs")
    assert "backlogs [64] vs [128]" in line, line
