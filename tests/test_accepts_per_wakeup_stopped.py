"""tests/accepts_per_wakeup.py queues its connections only once every thread of every worker has stopped.

SIGSTOP's group stop is not done when kill() returns: each thread stops when it next handles the signal, and a
thread still running accepts connections before bpftrace is there to count them (HAProxy's two threads, connected to
at once: a run counted 3 accepts of 40). The witness is /proc/PID/task/*/stat, read at the first connection: a
worker of 8 threads that only spin at nice 19 (more threads than CPUs: most wait for one when the signal comes)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import accepts_per_wakeup
import pytest
from accepts_per_wakeup import BPFTRACE, counted_after_queueing, program

from accept_order.probes.accepts import ensure_tracefs

SPINNING = """
import hashlib, os, threading
os.nice(19)  # the last to get a CPU back, to stop
block = bytes(1 << 20)
def spin():
    while True:
        hashlib.sha256(block).digest()  # without the GIL: every thread runs, or waits for a CPU
for _ in range(7):
    threading.Thread(target=spin, daemon=True).start()
print("spinning", flush=True)
spin()
"""


class FirstConnection(Exception):
    """Raised at the first connection the helper makes: what it had done by then is all the test needs."""


def _states(pid: int) -> list[str]:
    return [(task / "stat").read_text().rsplit(")", 1)[1].split()[0] for task in Path(f"/proc/{pid}/task").iterdir()]


@pytest.fixture
def spinning() -> Iterator[int]:
    worker = subprocess.Popen([sys.executable, "-c", SPINNING], stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None and worker.stdout.readline() == "spinning\n"
        yield worker.pid
    finally:
        worker.kill()
        worker.wait(timeout=30)


@pytest.mark.skipif(os.geteuid() != 0 or BPFTRACE is None or not ensure_tracefs()[0], reason="root and bpftrace")
def test_connections_queue_once_every_thread_has_stopped(spinning: int, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def first_connection(*args: Any, **kwargs: Any) -> socket.socket:
        seen.append(_states(spinning))
        raise FirstConnection

    monkeypatch.setattr(accepts_per_wakeup.socket, "create_connection", first_connection)
    with pytest.raises(FirstConnection):
        counted_after_queueing([spinning], ("127.0.0.1", 9), 40, program([spinning]), b"HTTP/1.")
    assert len(seen[0]) == 8 and set(seen[0]) <= {"T", "t"}, seen
    assert "T" not in _states(spinning), "let go after"
