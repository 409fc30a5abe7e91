"""Every write to stdout and stderr goes whole (issue 27 §1), whoever makes it: a report, a note, an error
line, click's --help, --version and usage errors, Python's own messages.

A descriptor left non-blocking by whoever made it (a pipe from an event loop) takes only what fits, and
Python's text streams drop the rest without a word. `whole_std_streams` puts sys.stdout and sys.stderr on a
file whose every write waits (poll) while the pipe is full, until it has taken everything; a reader that
went away is EPIPE as ever (cli/app.py: 141 on stdout; on stderr nothing can be said, the status stands).

Standard library only: the entry point (cli/__init__.py) calls it before click and rich are imported.
"""

from __future__ import annotations

import io
import os
import select
import sys
from typing import Any


def write_all(fd: int, data: Any) -> None:
    """All of `data` (bytes-like) to `fd`, waiting while a non-blocking descriptor is full."""
    view = memoryview(data).cast("B")
    poller: select.poll | None = None
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            if poller is None:
                poller = select.poll()
                poller.register(fd, select.POLLOUT)
            poller.poll()  # writable again, or the reader gone (POLLERR): the next write says which


class WholeFile(io.FileIO):
    """A descriptor's file whose write takes everything it is given (or raises)."""

    def write(self, data: Any) -> int:
        write_all(self.fileno(), data)
        return len(memoryview(data).cast("B"))


def whole_std_streams() -> None:
    """sys.stdout and sys.stderr (Python's own, on descriptors 1 and 2) replaced by the same text streams
    over a WholeFile: same encoding, error handler and buffering."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        stream = getattr(sys, name)
        try:
            if not isinstance(stream, io.TextIOWrapper) or stream.fileno() != fd:
                continue
            stream.flush()
        except (OSError, ValueError):  # closed, or already failing: left as it is
            continue
        raw = WholeFile(fd, "w", closefd=False)
        whole = io.TextIOWrapper(
            io.BufferedWriter(raw),
            encoding=stream.encoding,
            errors=stream.errors,
            newline="\n",
            line_buffering=stream.line_buffering,
            write_through=stream.write_through,
        )
        setattr(sys, name, whole)
