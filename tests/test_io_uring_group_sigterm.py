"""A SIGTERM to the whole process group (timeout(1), systemd) stops `serve -m io-uring` as it stops every other
mode: the supervisor's tally, status 0, every worker gone. A worker's SIGTERM handler returns when the supervisor
has not asked (the supervisor stops its workers itself); the io_uring binding's wait then ended with
InterruptedError, which Python's own calls retry (PEP 475): the worker died with a traceback and the command said
'worker N died with exit code 1' and exited 1 (8 of 8 group SIGTERMs at 5326401 and after)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import psutil
import pytest
from conftest import OutputReader, wait_for

from accept_order.servers.modes import MODES

START_TIMEOUT_S = 30.0  # interpreter start and imports on a loaded machine
EXIT_TIMEOUT_S = 30.0


def test_a_group_sigterm_stops_io_uring_workers_like_any_others() -> None:
    if reason := MODES["io-uring"].unavailable():
        pytest.skip(reason)
    proc = subprocess.Popen(
        [sys.executable, "-m", "accept_order", "serve", "--mode", "io-uring", "--workers", "3"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        start_new_session=True,  # its own group, as a shell job's: the signal reaches it and its workers alone
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = OutputReader(proc.stdout), OutputReader(proc.stderr)
    try:
        out.wait_for(r"try: .*\n", START_TIMEOUT_S)
        pids = [int(p) for p in re.findall(r"^\s+worker \d+ pid (\d+)$", out.text, re.MULTILINE)]
        assert len(pids) == 3, out.text
        # every worker asleep in its ring's wait: the signal must find each inside the io_uring_enter call
        wait_for(
            lambda: [psutil.Process(pid).status() for pid in pids],
            lambda states: all(state == psutil.STATUS_SLEEPING for state in states),
            timeout=START_TIMEOUT_S,
            what="the workers asleep in their wait",
        )
        os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(EXIT_TIMEOUT_S)
        text, errors = out.finish(), err.finish()
        assert (code, errors) == (0, ""), errors
        assert "tally" in text and "Traceback" not in text
        wait_for(
            lambda: [pid for pid in pids if psutil.pid_exists(pid)],
            lambda alive: not alive,
            timeout=EXIT_TIMEOUT_S,
            what=f"worker pids {pids} to be gone",
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(EXIT_TIMEOUT_S)
