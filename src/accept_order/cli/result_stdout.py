"""`--json -`: a result's JSON on stdout (click.File's convention), whole, or said not to be and kept in a file.

Unlike a report's, a reader that went away before taking all of it (`| jq` with a typo ends at once, `| head -c 10`)
is no quiet end: the measurement would be lost, so it is kept in a file whose name the error line gives. The JSON is
written while signals are held (cli/common.py report_and_save), as a file is, so that a Ctrl-C cannot cut it short
while its reader takes it; a reader that takes nothing (a stalled pipe) would then keep the command from ever ending,
so a signal while stdout takes nothing for STALLED_MS ends the wait.

A reader that closes once it has what it wants (`| head -c 100`) ends the command as it ends a report's, with 141
(128 + SIGPIPE, what a shell shows for `yes | head`), and a line naming the file the result is kept in. A JSON that
fits the empty pipe goes in one write, which such a reader cannot cut short: a page at a time, a 10 KB latency result
met EPIPE on its second or third page and the peek failed where `cat result.json | head -c 100` succeeds."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import tempfile
import termios
import time

from ..core.errors import OutputError, ResultFileError
from ..core.signals import latest, pending, received
from ..core.status import ExitStatus
from .output import guarded_stdout, naming_stdout

# A stdout that took nothing for this long is stalled: a signal meanwhile then ends the wait. Long enough for a reader
# that is only slow (jq starting on a busy machine), short beside a user waiting on Ctrl-C.
STALLED_MS = 1000


def write_result(text: str, kind: str) -> None:
    """`text`, the `kind` result's JSON, to stdout whole; else ResultFileError (one line, exit 1) saying why and where
    the result was kept instead."""
    try:
        _write_unless_stalled(text)
    except OutputError as exc:  # "cannot write to stdout: <why>"
        why, (path, kept) = str(exc).partition(": ")[2], _keep(text, f"accept-order-{kind}")
        failed = ReaderGone if exc.broken_pipe and path is not None else ResultFileError  # lost: a failure
        raise failed(f"cannot write the result to stdout: {why}; {kept}") from None


class ReaderGone(ResultFileError):
    """stdout's reader went away before it took the whole result, which is kept in a file: how `| head` ends a
    command (141), said in one line since the result is not where the user looks for it."""

    exit_code = ExitStatus.BROKEN_PIPE


def kept_instead(text: str, name: str) -> str:
    """`text` in a new file `name`-<time>.json of the working directory (else of the temporary one): where, or why it
    is lost (the experiment scripts' --json - too)."""
    return _keep(text, name)[1]


def _keep(text: str, name: str) -> tuple[str | None, str]:
    """kept_instead's file and words (None: lost)."""
    from ..core.text import escape_controls
    from ..results.files import write_bytes

    name, lost = f"{name}-{time.strftime('%Y%m%d-%H%M%S')}", ""
    for folder in (os.curdir, tempfile.gettempdir()):
        path, count = os.path.join(folder, f"{name}.json"), 1
        while os.path.lexists(path):  # never over another file (a run that ended in the same second)
            count += 1
            path = os.path.join(folder, f"{name}-{count}.json")
        try:
            write_bytes(path, text.encode("utf-8"))
        except ResultFileError as exc:  # a folder it cannot write: the next one
            lost = str(exc)
            continue
        return path, f"the result is kept in {escape_controls(path)}"
    return None, f"the result is lost ({lost})"


def _write_unless_stalled(text: str) -> None:
    """`text` to stdout a pipe's atomic write at a time, each once poll says it fits: a blocked write would not return
    for a held signal (Python retries it). OutputError naming stdout when it fails, or when stdout takes nothing for
    STALLED_MS while a signal is pending, or once a second one came, during the write or before it (a first one that
    stopped the run was raised already: the partial result's write is what a second one cuts short)."""
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
                # held, or one after the one that stopped the command (a second means stop now: core/signals.py)
                signum = pending() or (latest() if received() > min(signals_before, 1) else None)
                if signum is not None:
                    raise OutputError(
                        f"cannot write to stdout: {signal.Signals(signum).name} came while its reader took none of "
                        f"it ({done} of {len(data)} bytes written)"
                    )
                continue
            try:
                done += os.write(fd, data[done : done + _room(fd)])  # fits whole once poll said so
            except BlockingIOError:  # another writer took the room first
                continue
            except BrokenPipeError:
                gone = f"its reader has gone ({done} of {len(data)} bytes written)"
                raise OutputError(f"cannot write to stdout: {gone}", broken_pipe=True) from None


def _room(fd: int) -> int:
    """What one write to `fd` takes without blocking once poll said it may: an empty pipe's whole size (every slot of
    it free), else a page (poll promises one free slot, and a page fits it whole). Only another writer of the same
    pipe, between the look and the write, could make the first block."""
    try:
        size = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
        unread = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, bytes(4)))[0]
    except OSError:  # not a pipe: a file, a terminal, a socket
        return select.PIPE_BUF
    return int(size) if unread == 0 else select.PIPE_BUF
