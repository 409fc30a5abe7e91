"""What a client sends and reads, and how a failure is named: shared by both client loops.

A built-in worker answers each connection with one line, `worker I pid P`, and closes. A real server's
answer can name only its pid (`worker P`, e.g. nginx's `$pid`). Either way the reply is *one* way to
attribute a connection; servers.target.Attribution is where a server says how its connections are
attributed.
"""

from __future__ import annotations

import errno
import os

# Failures that are not an errno of their own.
TIMEOUT = "timeout"
NO_REPLY = "no reply"  # the server closed without a line
BAD_REPLY = "bad reply"  # it sent something that names no worker of this server
ABORTED = "aborted"  # the run stopped (a worker died, Ctrl-C) before this connection finished


def parse_reply(data: bytes) -> tuple[int | None, int] | None:
    """`worker 3 pid 1234` -> (3, 1234); `worker 1234` -> (None, 1234); None for anything else."""
    parts = data.split()
    try:
        if len(parts) >= 4 and parts[0] == b"worker" and parts[2] == b"pid":
            return int(parts[1]), int(parts[3])
        if len(parts) == 2 and parts[0] == b"worker":
            return None, int(parts[1])
    except ValueError:
        return None
    return None


def errno_name(code: int) -> str:
    """`111` -> `ECONNREFUSED`: the key failures are counted under."""
    return errno.errorcode.get(code, f"errno {code}")


def describe_error(name: str) -> str:
    """`ECONNREFUSED` -> `ECONNREFUSED (Connection refused)`; other keys unchanged."""
    code = getattr(errno, name, None)
    return f"{name} ({os.strerror(code)})" if isinstance(code, int) else name


def error_key(exc: OSError) -> str:
    """An OSError as its errno name (or its text when it has no errno)."""
    if exc.errno is None:
        return str(exc) or type(exc).__name__
    return errno_name(exc.errno)
