"""`--json -` to a stdout that takes nothing, after the signal that stopped the command: a later signal must end the
wait. The first signal was raised already (it stopped serve, or cut a run short and its partial result is being
written), so it was never "pending" again: the write waited on the pipe for ever, deaf to every later SIGTERM and
Ctrl-C. The experiment scripts' own write (experiments/_cli.py), after their one-line errors, let a Ctrl-C there out
as a traceback."""

from __future__ import annotations

import array
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from conftest import OutputReader, wait_for

COMMAND = [sys.executable, "-m", "accept_order"]
WORKERS = 12  # serve's tally of 12 workers is ~6.5 KB: more than the one page the pipe is cut down to


def _in_pipe(readable: int) -> int:
    """Bytes in the pipe, written and not read."""
    count = array.array("i", [0])
    fcntl.ioctl(readable, termios.FIONREAD, count)
    return count[0]


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

        try:
            err.wait_for(r"try: .*\n", 60)  # serving (its announcement's last line, on stderr)
            proc.send_signal(signal.SIGTERM)  # serve stops, and writes its tally
            wait_for(
                lambda: _in_pipe(readable), lambda held: held >= capacity, 60, "the tally to fill the pipe nobody reads"
            )
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


SCRIPTS = Path(__file__).resolve().parents[1] / "experiments"
SCRIPT_RUNS = [  # each JSON more than a page: herd's ~5 KB, latency's ~15 KB
    ("herd.py", ["--workers", "2", "--connections", "2", "--clients", "4", "--modes", "epoll"]),
    (
        "latency_shared_vs_reuseport.py",
        ["--workers", "2", "--connections", "50", "--concurrency", "4", "--modes", "epoll,reuseport"],
    ),
]


@pytest.mark.parametrize(("script", "args"), SCRIPT_RUNS, ids=[script for script, _ in SCRIPT_RUNS])
def test_a_ctrl_c_while_a_script_waits_on_a_reader_that_takes_nothing(
    script: str, args: list[str], tmp_path: Path
) -> None:
    """An experiment script's JSON to a stdout nobody reads, then Ctrl-C: one line naming the file the JSON was kept
    in, exit 130; before, a KeyboardInterrupt traceback (the write is after the script's one-line errors)."""
    readable, writable = os.pipe()
    fcntl.fcntl(writable, fcntl.F_SETPIPE_SZ, 4096)
    capacity = fcntl.fcntl(readable, fcntl.F_GETPIPE_SZ)
    try:
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPTS / script), *args, "--json", "-"],
            stdout=writable,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        os.close(writable)
        writable = -1
        try:
            wait_for(lambda: _in_pipe(readable), lambda held: held >= capacity, 120, "the JSON to fill the pipe")
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=60) == 130
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        os.close(readable)
        if writable != -1:
            os.close(writable)
    assert "Traceback" not in err, err
    line = re.search(
        rf"{script}: error: cannot write the JSON to stdout: interrupted; the result is kept in "
        rf"(\./{script.removesuffix('.py')}-[-\d]+\.json)\n",
        err,
    )
    assert line, err
    assert json.loads((tmp_path / line[1]).read_text())


# The latch as the command line has it (signals held outside a command's body): a first SIGINT taken as the one that
# stopped the run, then a second one, both before the partial result's write begins (a quick Ctrl-C Ctrl-C).
BOTH_BEFORE = """
import os, signal, sys
from accept_order.core import signals
from accept_order.cli.result_stdout import write_result
from accept_order.core.errors import ResultFileError
signals.install()
with signals.holding() as hold:
    os.kill(os.getpid(), signal.SIGINT)
assert hold.taken() is not None
os.kill(os.getpid(), signal.SIGTERM)
assert signals.received() == 2 and signals.pending() is None
try:
    write_result("x" * 100_000, "run")
except ResultFileError as exc:
    print(exc, file=sys.stderr)
"""


def test_a_second_signal_before_the_write_ends_it_once_its_reader_takes_nothing(tmp_path: Path) -> None:
    readable, writable = os.pipe()
    fcntl.fcntl(writable, fcntl.F_SETPIPE_SZ, 4096)
    try:
        done = subprocess.run(
            [sys.executable, "-c", BOTH_BEFORE],
            stdout=writable,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )  # before: blocked until the timeout, the second signal counted before the write began
    finally:
        os.close(readable)
        os.close(writable)
    assert re.fullmatch(
        r"cannot write the result to stdout: SIGTERM came while its reader took none of it \(4096 of 100000 bytes "
        r"written\); the result is kept in \./accept-order-run-[-\d]+\.json\n",
        done.stderr,
    ), done.stderr
