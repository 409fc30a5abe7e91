"""inspect interrupted says it stopped inspecting and left the server alone: it said 'interrupted; all workers
stopped' of a server it only reads (a first-hour tester's find)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import wait_for

TIMEOUT_S = 30.0


def reads_from(reader: int, pid: int) -> bool:
    """The inspecting process holds a file of the server's /proc open (a look keeps them open till its end)."""
    fds = Path(f"/proc/{reader}/fd")
    try:
        return any(os.readlink(fd).startswith(f"/proc/{pid}/") for fd in fds.iterdir())
    except OSError:
        return False


def test_an_interrupted_inspect_says_the_server_was_not_touched() -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", "import socket, sys; s = socket.create_server(('127.0.0.1', 0)); sys.stdin.read()"],
        stdin=subprocess.PIPE,
    )
    cmd = [sys.executable, "-m", "accept_order", "inspect", str(server.pid), "--samples", "100"]
    try:
        for _ in range(5):  # a look of 100 samples lasts ~0.5 s: the signal may come after it ended; then again
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                looking = lambda p=proc: reads_from(p.pid, server.pid) or p.poll() is not None  # noqa: E731
                wait_for(looking, bool, TIMEOUT_S, "a look")
                proc.send_signal(signal.SIGINT)
                _, err = proc.communicate(timeout=TIMEOUT_S)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            if proc.returncode == 0:
                continue
            assert proc.returncode == 130, err
            assert err.splitlines()[-1].endswith("; stopped inspecting (the server was not touched)"), err
            break
        else:
            raise AssertionError("every look ended before its signal")
        assert server.poll() is None  # never signalled
    finally:
        server.kill()
        server.wait()
