"""The line that ends an attached run when a worker exits counted requests over kept connections as connections.

gunicorn (gthread workers, --max-requests 300) under `latency --attach --requests-per-connection 20`: 'attached
worker 0 exited 0.54 s into the run; the run stopped after 828 connections', where the drivers had made 828
requests (over about 41 connections): the load generator counts each request over a kept connection. The line
says requests there now. Here PyPI's gunicorn with --max-requests 100: the worker that leaves has answered 100
requests itself (gunicorn's count, its reason to leave), so the run stopped after at least that many requests."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import psutil
import pytest
from conftest import assert_one_error_line, run_cli, wait_for

from accept_order.servers.launched.gunicorn import gunicorn_missing

MAX_REQUESTS = 100

# gunicorn 24+ listens on ~/.gunicorn/gunicorn.ctl unless told not to (23 has no such option)
NO_CONTROL_SOCKET = (
    ["--no-control-socket"] if gunicorn_missing() is None and int(version("gunicorn").split(".")[0]) >= 24 else []
)

pytestmark = pytest.mark.skipif(gunicorn_missing() is not None, reason=str(gunicorn_missing()))


def test_the_stop_line_counts_requests_over_kept_connections(tmp_path: Path, free_port: int) -> None:
    argv = [sys.executable, "-m", "gunicorn", "-w", "2", "-k", "gthread", "--threads", "2", "--keep-alive", "30"]
    argv += ["--max-requests", str(MAX_REQUESTS), "-b", f"127.0.0.1:{free_port}", *NO_CONTROL_SOCKET]
    server = subprocess.Popen(
        [*argv, "accept_order.servers.launched.gunicorn_app:app"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    try:
        wait_for(lambda: len(psutil.Process(server.pid).children()), lambda n: n == 2, 60, "gunicorn's 2 workers")
        attach = ["latency", "--attach", str(server.pid), "--port", str(free_port), "--protocol", "http"]
        result = run_cli([*attach, "-c", "4", "--requests-per-connection", "5", "--duration", "60s"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    line = assert_one_error_line(result, 1, "exited", "the run stopped after")
    done = re.search(r"the run stopped after (\d+) (\w+) \(", line)
    assert done is not None, line
    assert done.group(2) == "requests", line
    assert int(done.group(1)) >= MAX_REQUESTS, line  # the leaving worker's own, at least
