"""The sequential client (loads/sequential.py) and a reply longer than MAX_REPLY whose last part comes with the
FIN: too long, as the load generator's two loops and the client before it count it, not served by its tail.

The server sends MAX_REPLY bytes, waits until the client has read them (its `take` returned), then a worker's
line and its close. The client's next wakeup has the FIN (POLLRDHUP), whose one recv used to replace the reply
read so far: the tail alone, a valid "worker PID" line, was attributed and the connection served."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from accept_order.core.processes import MAX_REPLY
from accept_order.loads import sequential

TIMEOUT_S = 30.0


def _serve_in_two_parts(listener: socket.socket, read: threading.Event) -> None:
    conn, _ = listener.accept()
    with conn:
        conn.sendall(b"J" * MAX_REPLY)  # the client wakes for MAX_REPLY bytes (SO_RCVLOWAT), without the FIN
        read.wait(TIMEOUT_S)  # until the client has read them: the rest then comes with the FIN
        conn.sendall(b"worker 4242\n")


def test_a_reply_too_long_is_not_served_by_its_tail(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    read = threading.Event()
    real_take = sequential.take

    def take_then_tell(*args: Any) -> Any:
        taken = real_take(*args)
        read.set()
        return taken

    monkeypatch.setattr(sequential, "take", take_then_tell)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        server = threading.Thread(target=_serve_in_two_parts, args=(listener, read), daemon=True)
        server.start()
        port = listener.getsockname()[1]
        path = tmp_path / "run.json"
        result = run_cli(["run", "--target", f"127.0.0.1:{port}", "-w", "1", "-n", "1", "--json", str(path)])
        server.join(TIMEOUT_S)
    assert read.is_set()  # the first part was read on its own, before the FIN
    (record,) = json.loads(path.read_text())["records"]
    assert record["worker"] is None, result.output
    assert record["error"].startswith("unexpected reply b'JJJJ"), record
