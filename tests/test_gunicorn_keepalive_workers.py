"""inspect's cure row for gunicorn's keepalive said it applies to 'gthread and gevent workers only'. A gunicorn of
uvicorn workers (-k uvicorn.workers.UvicornWorker, the usual way to run an ASGI app under gunicorn) held 9 kept
connections, and inspect offered that row, where the same gunicorn had closed every one of them at its 2 s
default (ss: the server's side in FIN-WAIT-2): uvicorn's worker reads keepalive (timeout_keep_alive), as do
gunicorn's own asgi worker and every class but sync. The row names them now; here PyPI's gunicorn with uvicorn's
worker, --keep-alive 1, closes an idle kept connection itself, and the row says it would."""

from __future__ import annotations

import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import wait_for

from accept_order.servers.launched.gunicorn import GunicornKind, gunicorn_missing
from accept_order.servers.launched.uvicorn import uvicorn_missing

APP = """
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"3")]})
    await send({"type": "http.response.body", "body": b"ok\\n"})
"""

# gunicorn 24+ listens on ~/.gunicorn/gunicorn.ctl unless told not to (23 has no such option)
NO_CONTROL_SOCKET = (
    ["--no-control-socket"] if gunicorn_missing() is None and int(version("gunicorn").split(".")[0]) >= 24 else []
)

pytestmark = pytest.mark.skipif(
    gunicorn_missing() is not None or uvicorn_missing() is not None, reason="needs PyPI's gunicorn and uvicorn"
)


def keepalive_row() -> str:
    (row,) = [cure.what for cure in GunicornKind().cures if cure.setting.startswith("keepalive")]
    return row


def test_uvicorns_worker_closes_an_idle_kept_connection_and_the_row_says_so(tmp_path: Path, free_port: int) -> None:
    (tmp_path / "h4app.py").write_text(APP)
    argv = [sys.executable, "-m", "gunicorn", "-w", "1", "-k", "uvicorn.workers.UvicornWorker", "--keep-alive", "1"]
    argv += ["-b", f"127.0.0.1:{free_port}", "--chdir", str(tmp_path), *NO_CONTROL_SOCKET, "h4app:app"]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:

        def connected() -> socket.socket | None:
            try:
                return socket.create_connection(("127.0.0.1", free_port), timeout=1)
            except OSError:
                return None

        conn = wait_for(connected, lambda c: c is not None or server.poll() is not None, 30.0, "gunicorn listening")
        assert conn is not None, f"gunicorn exited {server.returncode}"
        with conn:
            conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # HTTP/1.1: kept unless someone closes it
            conn.settimeout(30)  # keepalive 1 s: the server closes long before; without it, this recv times out
            reply = b""
            while not reply.endswith(b"ok\n"):
                reply += conn.recv(1000)
            assert reply.startswith(b"HTTP/1.1 200") and b"connection: close" not in reply.lower(), reply
            assert conn.recv(1000) == b"", "the server should close the idle kept connection (EOF)"
    finally:
        server.terminate()
        server.wait(timeout=30)
    row = keepalive_row()
    assert "UvicornWorker" in row and "gthread and gevent workers only" not in row, row
