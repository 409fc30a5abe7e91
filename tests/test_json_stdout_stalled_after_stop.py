"""`--json -` after the signal that stopped the command: its JSON is written to a stdout that takes nothing, and a
later signal must end the wait. The first signal was raised already (it stopped serve, or cut a run short and its
partial result is being written), so it was never "pending" again: the write waited on the pipe for ever, deaf to
every later SIGTERM and Ctrl-C."""

from __future__ import annotations

import array
import fcntl
import os
import re
import signal
import subprocess
import sys
import termios
from pathlib import Path

from conftest import OutputReader, wait_for

COMMAND = [sys.executable, "-m", "accept_order"]
WORKERS = 12  # serve's tally of 12 workers is ~6.5 KB: more than the one page the pipe is cut down to


def test_a_signal_after_the_one_that_stopped_serve_ends_a_stalled_write(free_port: int, tmp_path: Path) -> None:
    readable, writable = os.pipe()
    fcntl.fcntl(writable, fcntl.F_SETPIPE_SZ, 4096)
    capacity = fcntl.fcntl(readable, fcntl.F_GETPIPE_SZ)
    try:
        proc = subprocess.Popen(
            [*COMMAND, "serve", "-m", "blocking", "-w", str(WORKERS), "--port", str(free_port), "--json", "-"],
            stdout=writable,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        os.close(writable)
        writable = -1
        assert proc.stderr is not None
        err = OutputReader(proc.stderr)

        def in_the_pipe() -> int:
            count = array.array("i", [0])
            fcntl.ioctl(readable, termios.FIONREAD, count)
            return count[0]

        try:
            err.wait_for(r"try: .*\n", 60)  # serving (its announcement's last line, on stderr)
            proc.send_signal(signal.SIGTERM)  # serve stops, and writes its tally
            wait_for(in_the_pipe, lambda held: held >= capacity, 60, "the tally to fill the pipe nobody reads")
            proc.send_signal(signal.SIGINT)  # the user gives up on the reader
            assert proc.wait(timeout=60) == 1  # before: still blocked, whatever the timeout
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        text = err.finish()
    finally:
        os.close(readable)
        if writable != -1:
            os.close(writable)
    last = text.splitlines()[-1]
    assert re.fullmatch(
        rf"accept-order: error: cannot write the result to stdout: SIGINT came while its reader took none of it "
        rf"\({capacity} of \d+ bytes written\); the result is kept in \./accept-order-serve-[-\d]+\.json",
        last,
    ), text
