"""A server of the tests' own that answers as the tool's nginx handler does ('worker PID', no worker index), naming
the pids it is told to, one per connection in order; and a real `latency --target` file of it. Imported by name
(`from pid_replies import Replies, replies, target_file`), as conftest's helpers are (tests/ is on sys.path; no
test_ prefix, so pytest collects nothing here).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from conftest import run_cli


class Replies:
    """An HTTP server whose n-th connection is answered 'worker PIDS[n]' (the tool's nginx handler's words); an
    entry 'I pid P' makes it 'worker I pid P', as `accept-order serve` answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.pids: list[int | str] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def _serve(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                try:
                    conn.recv(4096)
                    body = f"worker {self.pids.pop(0)}\n".encode()
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                except (OSError, IndexError):
                    pass


@pytest.fixture
def replies() -> Iterator[Replies]:
    server = Replies()
    try:
        yield server
    finally:
        server.done.set()
        server.thread.join(5)
        server.listener.close()


def target_file(replies: Replies, tmp_path: Path, name: str, pids: Sequence[int | str], workers: int = 2) -> str:
    """A real `latency --target` run at `replies` answered by `pids` in order (one connection at a time, one
    driver process, so the replies come in that order), saved as `name`."""
    replies.pids = list(pids)
    path = tmp_path / name
    args = ["latency", "--target", f"127.0.0.1:{replies.port}", "--protocol", "http", "-w", str(workers)]
    made = run_cli([*args, "-n", str(len(pids)), "-c", "1", "--driver-procs", "1", "--json", str(path)])
    assert made.exit_code == 0, made.output
    return str(path)
