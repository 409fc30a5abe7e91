"""Whether a descriptor's open file is in blocking mode, from the `flags:` line of /proc/PID/fdinfo/FD.

The line is the open file's f_flags in octal (`flags:\t02004002`: O_RDWR, O_NONBLOCK, O_CLOEXEC), the same
for every process that holds the file. For a listener it says how it is accepted from: a server that waits for
readiness (epoll, poll, select, io_uring's poll) sets O_NONBLOCK, since a connection another worker took first
would leave its accept() blocked while its other connections wait; one whose workers block in accept() leaves
it clear. Checked here (Linux 6.18) on every kind this tool launches: only the builtin blocking mode and Apache
prefork with one Listen have a blocking listener.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .proc_read import read_proc


def parse_flags(text: bytes) -> int | None:
    """The flags of an fdinfo's text (None when it has no flags line: the descriptor was closed)."""
    for line in text.splitlines():
        if line.startswith(b"flags:"):
            try:
                return int(line[6:].strip(), 8)
            except ValueError:
                return None
    return None


def blocking_mode(pid: int, fd: int, read: Callable[[str], bytes | None] = read_proc) -> bool | None:
    """Whether `pid`'s descriptor `fd` is an open file in blocking mode (O_NONBLOCK clear); None when its
    fdinfo cannot be read (closed, the process gone, or another user's without root)."""
    text = read(f"/proc/{pid}/fdinfo/{fd}")
    flags = parse_flags(text) if text is not None else None
    return None if flags is None else not flags & os.O_NONBLOCK
