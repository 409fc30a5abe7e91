"""`--json -` to a stdout that takes nothing, after the signal that stopped the command: a later signal must end the
wait. The first signal was raised already (it stopped serve, or cut a run short and its partial result is being
written), so it was never "pending" again: the write waited on the pipe for ever, deaf to every later SIGTERM and
Ctrl-C. The experiment scripts' own write (experiments/_cli.py), after their one-line errors, let a Ctrl-C there out
as a traceback."""

from __future__ import annotations

import json
import re
import signal
import sys
from pathlib import Path

import pytest
from conftest import OutputReader
from unread_stdout import SCRIPT_ARGS, SCRIPTS, UnreadStdout

COMMAND = [sys.executable, "-m", "accept_order"]
WORKERS = 12  # serve's tally of 12 workers is ~6.5 KB: more than the one page the pipe is cut down to


def test_a_signal_after_the_one_that_stopped_serve_ends_a_stalled_write(free_port: int, tmp_path: Path) -> None:
    argv = [*COMMAND, "serve", "-m", "blocking", "-w", str(WORKERS), "--port", str(free_port), "--json", "-"]
    with UnreadStdout(argv, tmp_path, size=4096) as stdout:
        assert stdout.proc.stderr is not None
        err = OutputReader(stdout.proc.stderr)
        err.wait_for(r"try: .*\n", 60)  # serving (its announcement's last line, on stderr)
        stdout.proc.send_signal(signal.SIGTERM)  # serve stops, and writes its tally
        stdout.wait_until_full(60, "the tally to fill the pipe nobody reads")
        stdout.proc.send_signal(signal.SIGINT)  # the user gives up on the reader
        assert stdout.proc.wait(timeout=60) == 1  # before: still blocked, whatever the timeout
    text = err.finish()
    last = text.splitlines()[-1]
    assert re.fullmatch(
        rf"accept-order: error: cannot write the result to stdout: SIGINT came while its reader took none of it "
        rf"\({stdout.capacity} of \d+ bytes written\); the result is kept in \./accept-order-serve-[-\d]+\.json",
        last,
    ), text


@pytest.mark.parametrize(("script", "args"), SCRIPT_ARGS.items(), ids=list(SCRIPT_ARGS))
def test_a_ctrl_c_while_a_script_waits_on_a_reader_that_takes_nothing(
    script: str, args: list[str], tmp_path: Path
) -> None:
    """An experiment script's JSON to a stdout nobody reads, then Ctrl-C: one line naming the file the JSON was kept
    in, exit 130; before, a KeyboardInterrupt traceback (the write is after the script's one-line errors)."""
    with UnreadStdout([sys.executable, str(SCRIPTS / script), *args, "--json", "-"], tmp_path, size=4096) as stdout:
        stdout.wait_until_full(120, "the JSON to fill the pipe")
        stdout.proc.send_signal(signal.SIGINT)
        assert stdout.proc.wait(timeout=60) == 130
        assert stdout.proc.stderr is not None
        err = stdout.proc.stderr.read()
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
    with UnreadStdout([sys.executable, "-c", BOTH_BEFORE], tmp_path, size=4096) as stdout:
        # before: blocked until the timeout, the second signal counted before the write began
        _, err = stdout.proc.communicate(timeout=60)
    assert re.fullmatch(
        r"cannot write the result to stdout: SIGTERM came while its reader took none of it \(4096 of 100000 bytes "
        r"written\); the result is kept in \./accept-order-run-[-\d]+\.json\n",
        err,
    ), err
