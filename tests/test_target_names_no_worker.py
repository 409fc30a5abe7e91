"""--target at a server whose replies name no worker (a stock page: a plain nginx's 'hello'): each answer is served,
its worker not known, and the report says so.

'ramp --target 127.0.0.1:P --protocol http' at a plain nginx read 'Knee: no step held; the first that did not was
200/s: 200 failed (200 × bad reply)' and exited 1 ('served nothing'), where nginx's access log had all 200; latency
and burst the same. A reply that is an answer of the protocol (a 200 with a body; a line) now counts as served, on no
worker's row (loads/reply_keys.py UNNAMED_KEY), in the totals and latencies. The witness: the server's own count of
the requests it answered (this test's server, counting as it writes each answer).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli

SAYS = "No reply named a worker"


class Page:
    """A server answering every HTTP request with a page that names no worker, counting the answers it wrote."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.listener.settimeout(0.2)
        self.port = int(self.listener.getsockname()[1])
        self.answered = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

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
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n")
                    self.answered += 1
                except OSError:
                    pass


@pytest.fixture
def page() -> Iterator[Page]:
    served = Page()
    served.thread.start()
    try:
        yield served
    finally:
        served.done.set()
        served.thread.join(5)
        served.listener.close()


def _target(page: Page) -> list[str]:
    return ["--target", f"127.0.0.1:{page.port}", "--protocol", "http", "--driver-procs", "1"]


def test_latency_counts_a_page_served(page: Page, tmp_path: Path) -> None:
    path = tmp_path / "latency.json"
    result = run_cli(["latency", *_target(page), "-n", "20", "-c", "2", "--json", str(path)])
    assert result.exit_code == 0, result.output
    run = json.loads(path.read_text())
    timed = sum(n for _, n in run["histogram"]["counts"])
    assert timed == page.answered == 20 and not run["errors"]  # all the server answered, each timed
    assert not any(run["served"])  # on no worker's row
    assert SAYS in result.stdout and "served per worker" in result.stdout


def test_burst_counts_a_page_served(page: Page, tmp_path: Path) -> None:
    path = tmp_path / "burst.json"
    result = run_cli(["burst", *_target(page), "--clients", "20", "--json", str(path)])
    assert result.exit_code == 0, result.output
    (cell,) = json.loads(path.read_text())["runs"][0]["cells"]
    assert cell["unnamed"] == page.answered == 20 and not any(cell["served"]) and not cell["errors"]
    assert "served 20 (no reply named a worker)" in result.stdout and SAYS in result.stdout
    table = run_cli(["show", str(path), "--format", "csv"]).stdout.splitlines()
    (row,) = [dict(zip(table[0].split(","), line.split(","), strict=True)) for line in table[1:]]
    assert row["unnamed"] == "20" and not any(map(int, row["served"].split())), table  # the export: apart too


def test_ramp_counts_a_page_served(page: Page, tmp_path: Path) -> None:
    path = tmp_path / "ramp.json"
    args = ["ramp", *_target(page), "--concurrency-steps", "2", "--step", "300ms", "--json", str(path)]
    result = run_cli(args)
    assert result.exit_code == 0, result.output
    (step,) = json.loads(path.read_text())["steps"]
    assert step["unnamed"] == page.answered > 0 and not any(step["served"]), step
    assert "bad reply" not in result.stdout and "no step held" not in result.stdout
    assert SAYS in result.stdout
