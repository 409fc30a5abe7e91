"""--attach at a uWSGI started with --socket is refused saying what it speaks: its socket speaks uWSGI's own binary
protocol (the one nginx's uwsgi_pass speaks to it), and the refusal asked for --protocol http or line, neither of
which it answers: 'run --attach P --port PORT' read 'give --protocol http, or --protocol line if this one writes
first unasked', and '--protocol http' then served nothing ('5 × no reply') while uWSGI logged 'invalid request block
size: 21573 (max 4096)...skip' for each. Now, whatever --protocol is given, the refusal names --http-socket.

The servers are real: PyPI's uWSGI (pyuwsgi, the test extra's), whose log is the witness that the refused runs sent
nothing and that the run at --http-socket was answered."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runs import ran_in_process
from conftest import wait_for

from accept_order.probes.process_files import Started
from accept_order.servers.launched.uwsgi_config import Reading
from accept_order.servers.launched.uwsgi_sockets import binary_at, binary_in

TIMEOUT_S = 30.0
UWSGI = Path(sys.executable).with_name("uwsgi")
APP = """
def application(environ, start_response):
    start_response("200 OK", [("Content-Length", "3")])
    return [b"ok\\n"]
"""
INVALID = "invalid request block size"


def _uwsgi(tmp_path: Path, socket_option: str, port: int, *extra: str) -> Iterator[tuple[int, Path]]:
    """uWSGI (a master, 2 workers) at 127.0.0.1:`port` bound by `socket_option` (`extra`: more options); its pid and
    its log."""
    if not UWSGI.exists():
        pytest.skip("needs PyPI's uWSGI (pip install '.[test]')")
    (tmp_path / "app.py").write_text(APP)
    log = tmp_path / "uwsgi.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(UWSGI), "--master", "--processes", "2", socket_option, f"127.0.0.1:{port}", "--wsgi-file", "app.py"]
            + list(extra),
            cwd=tmp_path,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    try:
        wait_for(
            lambda: log.read_text(errors="replace"),
            lambda text: len(re.findall(r"spawned uWSGI worker \d", text)) == 2,
            TIMEOUT_S,
            "uWSGI's 2 workers spawned",
        )
        yield proc.pid, log
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(TIMEOUT_S)


@pytest.fixture
def binary_socket(tmp_path: Path, free_port: int) -> Iterator[tuple[int, int, Path]]:
    for pid, log in _uwsgi(tmp_path, "--socket", free_port):
        yield pid, free_port, log


@pytest.fixture
def http_socket(tmp_path: Path, free_port: int) -> Iterator[tuple[int, int, Path]]:
    for pid, log in _uwsgi(tmp_path, "--http-socket", free_port):
        yield pid, free_port, log


@pytest.mark.parametrize("protocol", [(), ("--protocol", "http"), ("--protocol", "line")])
def test_a_binary_socket_is_refused_naming_http_socket(
    binary_socket: tuple[int, int, Path], protocol: tuple[str, ...]
) -> None:
    pid, port, log = binary_socket
    ran = ran_in_process("run", "--attach", str(pid), "--port", str(port), "-n", "5", "--timeout", "2s", *protocol)
    lines = ran.stderr.strip().splitlines()
    assert ran.returncode == 2, ran.stderr
    assert len(lines) == 1, ran.stderr
    assert "uWSGI's own binary protocol" in lines[0] and f"--http-socket ADDRESS:{port}" in lines[0], ran.stderr
    assert f"socket = 127.0.0.1:{port}" in lines[0], ran.stderr
    assert INVALID not in log.read_text(errors="replace")  # refused before any connection


@pytest.mark.parametrize(
    ("socket_option", "forced"), [("--uwsgi-socket", ("--protocol", "http")), ("--socket", ("--protocol", "uwsgi"))]
)
def test_a_socket_binary_whatever_protocol_is_forced_is_refused(
    tmp_path: Path, free_port: int, socket_option: str, forced: tuple[str, ...]
) -> None:
    """--protocol sets only --socket's protocol, and uwsgi is the binary one: both sockets answer an HTTP request
    with 'invalid request block size' in the log (checked first here), and were let through to serve nothing."""
    served = _uwsgi(tmp_path, socket_option, free_port, *forced)
    pid, log = next(served)
    try:
        with socket.create_connection(("127.0.0.1", free_port), timeout=TIMEOUT_S) as probe:
            probe.sendall(b"GET / HTTP/1.0\r\n\r\n")
            assert _answer(probe) == b""  # closed unanswered
        wait_for(lambda: log.read_text(errors="replace").count(INVALID), lambda n: n == 1, TIMEOUT_S, "its log")
        ran = ran_in_process("run", "--attach", str(pid), "--port", str(free_port), "-n", "5", "--protocol", "http")
        assert ran.returncode == 2, ran.stderr
        assert f"{socket_option[2:]} = 127.0.0.1:{free_port}" in ran.stderr, ran.stderr
        assert f"in place of {socket_option} " in ran.stderr, ran.stderr
        assert log.read_text(errors="replace").count(INVALID) == 1  # the probe's alone: refused before connecting
    finally:
        served.close()  # its uWSGI killed


def _answer(probe: socket.socket) -> bytes:
    """What the server wrote before it closed: a close with the request unread is a reset, no answer either."""
    try:
        return probe.recv(100)
    except ConnectionResetError:
        return b""


def test_an_http_socket_is_let_through(http_socket: tuple[int, int, Path]) -> None:
    pid, port, log = http_socket
    ran = ran_in_process("latency", "--attach", str(pid), "--port", str(port), "-n", "3", "--protocol", "http")
    assert ran.returncode == 0, ran.stderr
    assert len(re.findall(r"GET / =>", log.read_text(errors="replace"))) == 3


def _reading(*settings: tuple[str, str | None]) -> Reading:
    return Reading(settings, ())


def test_which_settings_bind_the_port_to_the_binary_protocol(tmp_path: Path) -> None:
    assert binary_in(_reading(("socket", ":9000")), 9000) == "socket = :9000"
    assert binary_in(_reading(("uwsgi-socket", "[::]:9000")), 9000) == "uwsgi-socket = [::]:9000"
    assert binary_in(_reading(("socket", "127.0.0.1:9001")), 9000) is None  # another port
    assert binary_in(_reading(("socket", "/run/app.sock")), 9000) is None  # a Unix socket
    assert binary_in(_reading(("socket", ":9000"), ("protocol", "http")), 9000) is None  # http forced on it
    # --protocol is the default sockets' (--socket's): uwsgi-socket keeps its own; the last one given wins
    assert binary_in(_reading(("uwsgi-socket", ":9000"), ("protocol", "http")), 9000) == "uwsgi-socket = :9000"
    assert binary_in(_reading(("socket", ":9000"), ("socket-protocol", "uwsgi")), 9000) == "socket = :9000"
    assert binary_in(_reading(("socket", ":9000"), ("protocol", "http"), ("protocol", "uwsgi")), 9000) is not None
    (tmp_path / "app.ini").write_text("[uwsgi]\nsocket = 0.0.0.0:9000\n")
    ini = Started(("uwsgi", "--ini", "app.ini"), {}, "/", str(tmp_path), str(tmp_path))
    assert binary_at(ini, 9000) == "socket = 0.0.0.0:9000"
    short = Started(("uwsgi", "-s", ":9000", "--wsgi-file", "app.py"), {}, "/", str(tmp_path), str(tmp_path))
    assert binary_at(short, 9000) == "socket = :9000"
    http = Started(("uwsgi", "--http-socket", ":9000"), {}, "/", str(tmp_path), str(tmp_path))
    assert binary_at(http, 9000) is None
