"""uvicorn launched with one worker (review of 340ea3f, which asked whether its TCP_NODELAY holds there). With
--workers 1 uvicorn spawns no worker: it serves in its own process, on a socket asyncio made itself (with
IPPROTO_TCP, so asyncio sets TCP_NODELAY on what it accepts; the app's own setting finds no listener yet as it is
imported, and does nothing). The tool waited for a spawned worker that never came: `serve --server uvicorn -w 1`
and every one-worker run failed with "uvicorn's 1 workers were not ready within 10 s". The one process is the
worker now."""

from __future__ import annotations

import socket

import pytest
from test_nagle_uvicorn import exchange, server_side_nodelay

from accept_order.core.spec import ServerSpec
from accept_order.servers.launched.base import LaunchedServer
from accept_order.servers.registry import runnable, server_kind


def test_one_uvicorn_worker_is_its_own_process_and_answers_without_nagle() -> None:
    if runnable("uvicorn", ["asyncio"])[1]:
        pytest.skip(runnable("uvicorn", ["asyncio"])[1]["asyncio"])
    target = server_kind("uvicorn").make(ServerSpec(kind="uvicorn", mode="asyncio", workers=1, keepalive=True))
    assert isinstance(target, LaunchedServer)
    with target as server:
        assert server.master is not None
        assert list(server.pids) == [server.master.pid]
        with socket.create_connection(server.address, timeout=10) as conn:
            exchange(conn)
            assert server_side_nodelay(list(server.pids), conn.getsockname()[:2]) == 1
