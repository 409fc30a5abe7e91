"""observe of a server whose workers accept through io_uring does not say it got no connections.

`serve -m io-uring -w 3` answered 2,000 connections while `observe --port` watched it (its tally: worker 0 2,000),
and observe said 'no connection was accepted in 6.1 s: the server got no new connections while observed' over
'exact: counted by the kernel (bpftrace on the accept tracepoints, per thread)': an io_uring accept makes no accept
call, so the tracepoints see none, though inspect had named the mechanism (io-uring) in the same report. It says
now that the count cannot see them.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from io import StringIO

import pytest
from conftest import OutputReader
from observed_while import TIMEOUT_S, observed_while
from rich.console import Console

from accept_order.experiments.observe.report import observe_report
from accept_order.experiments.observe.verdict import headline
from accept_order.servers.modes import MODES

CONNECTIONS = 20

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="root and bpftrace")


@pytest.fixture
def server() -> Iterator[tuple[int, int]]:
    if reason := MODES["io-uring"].unavailable():
        pytest.skip(reason)
    proc = subprocess.Popen(
        [sys.executable, "-m", "accept_order", "serve", "-m", "io-uring", "-w", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        reader = OutputReader(proc.stdout)
        port = int(reader.wait_for(r"listening on 127\.0\.0\.1:(\d+)", TIMEOUT_S)[1])
        reader.wait_for(r"kill -TERM", TIMEOUT_S)  # every worker up
        yield proc.pid, port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def test_accepts_through_io_uring_are_not_called_none(server: tuple[int, int]) -> None:
    _, port = server
    replies: Counter[str] = Counter()

    def drive() -> None:
        for _ in range(CONNECTIONS):
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as conn:
                replies[re.sub(r" pid \d+", "", conn.makefile().readline().strip())] += 1

    result = observed_while(drive, port=port)
    assert sum(replies.values()) == CONNECTIONS and set(replies) == {"worker 0"}, replies  # the witness: served
    assert result.traced and result.counts is not None and sum(result.counts) == 0  # the accept calls saw none
    assert result.mechanism is not None and result.mechanism.name == "io-uring"
    said = headline(result)
    assert "got no new connections" not in said
    assert said.startswith("no accept call returned a connection in ") and "accept through io_uring" in said
    out = StringIO()
    Console(file=out, width=1000).print(observe_report(result))
    assert "blind to accepts made through io_uring, as this server's are" in out.getvalue()
