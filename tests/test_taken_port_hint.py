"""A port another process listens on is refused with the way out, not only who holds it: 'run --server nginx
--port 8080' beside a hand-started nginx said 'port 8080 on 127.0.0.1 already has a listener (pid N (nginx));
nginx would join its SO_REUSEPORT group and share its connections, or fail to listen', and left a newcomer to
guess what to do. Every path that refuses a taken port (a built-in listener's bind, the reuseport check before
the workers or a launched server start) now ends with the hint."""

from __future__ import annotations

import os
import socket

import psutil
import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.errors import ServerUnavailable
from accept_order.servers.launched.nginx_config import nginx_binary
from accept_order.servers.modes.base import TAKEN_PORT_HINT


def _has_nginx() -> bool:
    try:
        nginx_binary()
    except ServerUnavailable:
        return False
    return True


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--mode", "blocking"],
        ["serve", "--mode", "blocking"],
        ["run", "--mode", "reuseport"],
        pytest.param(
            ["run", "--server", "nginx"],
            marks=pytest.mark.skipif(not _has_nginx(), reason="nginx with its Lua module is not installed"),
        ),
    ],
    ids=["builtin-bind", "serve-bind", "reuseport-check", "nginx-check"],
)
def test_a_taken_port_says_how_to_go_on(argv: list[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run_cli([*argv, "--port", str(port), "-n", "3"] if argv[0] == "run" else [*argv, "--port", str(port)])
    line = assert_one_error_line(result, 1, f"port {port} on 127.0.0.1", f"pid {os.getpid()}")
    assert line.endswith(TAKEN_PORT_HINT), line
    assert TAKEN_PORT_HINT == "give another --port, or leave it out for a free one"
    assert not psutil.Process().children(recursive=True)  # refused before anything started
