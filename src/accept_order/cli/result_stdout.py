"""`--json -`: a result's JSON on stdout (click.File's convention), whole, or said not to be.

Unlike a report's, a reader that went away before taking all of it (`| head -c 10`) is no quiet end. The JSON is
written while signals are held (cli/common.py report_and_save), as a file is, so that a Ctrl-C cannot cut it short
while its reader takes it; a reader that takes nothing (a stalled pipe) would then keep the command from ever ending,
so a signal while stdout takes nothing for STALLED_MS ends the wait."""

from __future__ import annotations

import os
import select
import signal

from ..core.errors import OutputError, ResultFileError
from ..core.signals import latest, pending, received
from .output import guarded_stdout, naming_stdout

# A stdout that took nothing for this long is stalled: a signal meanwhile then ends the wait. Long enough for a reader
# that is only slow (jq starting on a busy machine), short beside a user waiting on Ctrl-C.
STALLED_MS = 1000


def write_result(text: str) -> None:
    """`text`, a result's JSON, to stdout whole; else ResultFileError (one line, exit 1) saying why."""
    try:
        _write_unless_stalled(text)
    except OutputError as exc:  # "cannot write to stdout: <why>"
        raise ResultFileError(f"cannot write the result to stdout: {str(exc).partition(': ')[2]}") from None


def _write_unless_stalled(text: str) -> None:
    """`text` to stdout a pipe's atomic write at a time, each once poll says it fits: a blocked write would not return
    for a held signal (Python retries it). OutputError naming stdout when it fails, or when stdout takes nothing for
    STALLED_MS while a signal is pending, or after one came during the write (a first one that stopped the run was
    raised already: the partial result's write is what a second one cuts short)."""
    stream = guarded_stdout()
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # none: click's CliRunner, a closed stdout (`>&-`)
        stream.write(text)
        stream.flush()
        return
    stream.flush()  # what went through the stream before goes first
    data = memoryview(text.encode(stream.encoding or "utf-8", stream.errors or "strict"))
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    done, signals_before = 0, received()
    with naming_stdout():
        while done < len(data):
            if not poller.poll(STALLED_MS):  # full all along: its reader takes nothing
                signum = pending() or (latest() if received() > signals_before else None)
                if signum is not None:
                    raise OutputError(
                        f"cannot write to stdout: {signal.Signals(signum).name} came while its reader took none of "
                        f"it ({done} of {len(data)} bytes written)"
                    )
                continue
            try:
                done += os.write(fd, data[done : done + select.PIPE_BUF])  # fits whole once poll said so
            except BlockingIOError:  # another writer took the room first
                continue
