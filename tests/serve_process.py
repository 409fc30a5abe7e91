"""`accept-order serve --mode blocking` as its own process, as a server started by someone else would be: the tests
that drive a --target at it and compare what each worker says it accepted (its --json tally)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from conftest import OutputReader

TIMEOUT_S = 60.0


@dataclass
class Serve:
    """A running `accept-order serve`: its port and worker pids; `tally()` stops it and reads each worker's accepts
    by index (its --json)."""

    port: int
    pids: list[int]
    proc: subprocess.Popen[str]
    tally_path: Path

    def tally(self) -> list[int]:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(TIMEOUT_S)
        counters = sorted(json.loads(self.tally_path.read_text())["counters"], key=lambda c: c["index"])
        assert [c["pid"] for c in counters] == self.pids
        return [c["accepts"] for c in counters]


@contextmanager
def serving(tally: Path, workers: int, port: int = 0) -> Iterator[Serve]:
    """serve --mode blocking (accept() rotates over idle workers: every worker serves) with `workers` workers on
    `port` (0: one the kernel picks, read from its announcement), in a session of its own; killed with its
    workers on the way out if the test has not stopped it."""
    command = [sys.executable, "-m", "accept_order", "serve", "--mode", "blocking", "-w", str(workers)]
    proc = subprocess.Popen(
        [*command, "--port", str(port), "--json", str(tally)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    out = OutputReader(proc.stdout)  # type: ignore[arg-type]
    try:
        out.wait_for(r"try: ", TIMEOUT_S)
        listening = int(out.wait_for(r"listening on 127\.0\.0\.1:(\d+)", TIMEOUT_S).group(1))
        pids = [int(p) for p in re.findall(r"worker \d+ pid (\d+)", out.text)]
        assert len(pids) == workers
        yield Serve(listening, pids, proc, tally)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(TIMEOUT_S)
        out.finish()
