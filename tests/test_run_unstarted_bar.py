"""`run` against a server this tool did not start shows its progress on a terminal however few the connections:
each may wait up to --timeout for an answer (an HTTP server under --protocol line answers none), and
'run --attach NGINX --port P' without --protocol http sat a minute with nothing on the screen (12 connections
of 5 s) before its report. The server here is a listener that accepts nothing: the kernel completes the
handshake into its queue and the client waits its --timeout, as it waits on nginx."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import socket
import struct
import subprocess
import sys
import termios

import psutil
import pytest
from test_progress_terminal import _read_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a pty")
ESCAPES = rb"(?:\x1b\[[0-9;?]*[A-Za-z]|\s)*"


def test_run_at_a_silent_server_shows_its_bar_while_a_connection_waits() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # never accepted: the connection waits in the queue for an answer that never comes
    port = listener.getsockname()[1]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "TERM")}
    argv = [sys.executable, "-m", "accept_order", "run", "--target", f"127.0.0.1:{port}", "-n", "2", "--timeout", "3s"]
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm-256color"})
    os.close(slave)
    seen = bytearray()
    try:
        # the bar, redrawn while the first connection waits: none done, a second or more elapsed
        waiting = rb"connections" + rb".*?0/2" + ESCAPES + rb"0:00:0[1-9]"
        found = _read_until(master, seen, 120, waiting)
        _read_until(master, seen, 120)  # the rest, until the terminal closes
        assert proc.wait(30) == 1, bytes(seen)[-800:]  # its report, then 'served nothing: 2 × timeout' (exit 1)
    finally:
        if proc.poll() is None:
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.kill()
            proc.kill()
            proc.wait()
        os.close(master)
        listener.close()
    text = bytes(seen)
    assert found, text[-800:]
    assert b"No connection got an answer" in text  # the run went on to its report
    assert re.search(waiting, text).start() < text.index(b"Verdict")  # type: ignore[union-attr]
