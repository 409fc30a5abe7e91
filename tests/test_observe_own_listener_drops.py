"""observe's line on ListenOverflows counts every listener of the network namespace: observe of nginx (4 workers,
its listen queue empty at each of 60 samples, `ss -ltm` d0 on its listener) said '4 handshake packets met a full
listen queue' of another program's listener (backlog 1, never accepting: d4). The server's own listeners' drop
count is now read at the start and the end and said beside it ('the server's own listeners dropped none')."""

from __future__ import annotations

import re
import socket
import subprocess
import threading
from collections.abc import Iterator

import pytest
from conftest import wait_for
from listening_process import NEVER_ACCEPTING, listening
from observe_result_made import result

from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.run import observe
from accept_order.experiments.observe.verdict import kernel

TIMEOUT_S = 20.0


def _line(made: ObserveResult) -> str:
    return next(line for line in kernel(made) if "met a full listen queue" in line)


def test_the_line_says_what_the_servers_own_listeners_dropped() -> None:
    counted = {"TcpExtListenOverflows": 4}
    assert _line(result([5, 5], counters=counted, listener_drops=0)).endswith(
        "a SYN sent again counts again); the server's own listeners dropped none"
    )
    assert _line(result([5, 5], counters=counted, listener_drops=4)).endswith("the server's own listeners dropped 4")
    assert _line(result([5, 5], counters=counted)).endswith("a SYN sent again counts again)")  # a file from before


@pytest.fixture
def stuck() -> Iterator[tuple[int, int]]:
    with listening(NEVER_ACCEPTING) as server:
        yield server


def _ss_drops(port: int) -> int:
    """The listener's drop count as `ss -ltm` shows it (skmem's d): the witness."""
    out = subprocess.run(["ss", "-ltnmH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"\bd(\d+)\)", out)
    assert found is not None, out
    return int(found.group(1))


def test_observe_counts_the_drops_of_its_servers_listener(stuck: tuple[int, int]) -> None:
    pid, port = stuck
    until, tried = threading.Event(), []

    def connect() -> None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.3).close()
        except OSError:
            pass

    def started(_: ObserveResult) -> None:
        if not tried:  # the first snapshot comes after the start's readings: every drop from here is counted
            threads = [threading.Thread(target=connect) for _ in range(5)]
            for thread in threads:
                thread.start()
            tried.extend(threads)  # started: the waiter joins them once it sees them

    def finished() -> None:
        for thread in tried:
            thread.join(TIMEOUT_S)
        until.set()

    def run() -> ObserveResult:
        return observe(pid=pid, duration_s=60.0, interval_s=0.1, trace=False, on_snapshot=started, until=until)

    waiter = threading.Thread(target=lambda: (wait_for(lambda: tried, bool, TIMEOUT_S, "the connects"), finished()))
    waiter.start()
    made = run()
    waiter.join(TIMEOUT_S)
    witness = _ss_drops(port)
    assert witness > 0
    assert made.listener_drops == witness, (made.listener_drops, witness)
