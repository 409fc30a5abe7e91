"""Ctrl-C of a latency load at a server that waits for a request, driven with --protocol line, says --protocol http.

'latency --target 127.0.0.1:8080 -n 20000 -c 50' at a stock nginx (the user forgot --protocol http): the
heartbeat read '2,950 of 20,000 connections' (each a timeout), and Ctrl-C ended it with '2950 × timeout' and
'interrupted' alone; the note naming --protocol http came only at the run's end, over an hour off. Here a
listener that accepts and never writes (what an HTTP server does with a client that sends nothing) stands for
nginx; the load is stopped with SIGINT to its process group, as a terminal's Ctrl-C, once the listener has
accepted connections that must have timed out (with -c 2, a third connection starts only when one has ended).
"""

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

SILENT_NOTE = "accept-order: note: no connection got an answer: with --protocol line (the default)"


class SilentListener:
    """Accepts every connection, holds it and writes nothing; `accepted` is set once `enough` came."""

    def __init__(self, enough: int) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.enough = enough
        self.accepted = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed: the test is over
                return
            self.held.append(conn)
            if len(self.held) >= self.enough:
                self.accepted.set()

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def silent() -> Iterator[SilentListener]:
    listener = SilentListener(enough=6)
    yield listener
    listener.close()


def test_a_stopped_load_no_server_answered_names_protocol_http(silent: SilentListener) -> None:
    argv = [sys.executable, "-m", "accept_order", "latency", "--target", f"127.0.0.1:{silent.port}"]
    argv += ["-n", "20000", "-c", "2", "--timeout", "200ms"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert silent.accepted.wait(120), "the load never reached the listener"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "× timeout" in out + err
    notes = [line for line in err.splitlines() if line.startswith(SILENT_NOTE)]
    assert len(notes) == 1, err
    assert notes[0].endswith("needs --protocol http")
    assert err.splitlines()[-1] == "accept-order: error: interrupted; the load stopped; the server was not touched"
