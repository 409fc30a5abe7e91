"""The exit statuses of accept-order: the only place they are defined (httpie's ExitStatus is the model)."""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1  # the run failed: a worker died, a port was taken, a file could not be written
    USAGE = 2  # the request was wrong: a bad value, an unknown mode, a path that may not be written
    HUNG_UP = 129  # 128 + SIGHUP: the terminal went away; ends a run like SIGTERM
    INTERRUPTED = 130  # 128 + SIGINT
    TERMINATED = 143  # 128 + SIGTERM
    # stdout's reader went away (`| head`): nothing on stderr, the status a shell shows for a process
    # that SIGPIPE ended (`yes | head`), which is what a C tool would have died of
    BROKEN_PIPE = 141  # 128 + SIGPIPE
