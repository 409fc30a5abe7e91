"""Whether a running uWSGI took the thunder lock, from what it was started with.

Under load a thunder-locked uWSGI can have every worker running at a look: none sleeps in the lock's
FUTEX_LOCK_PI, none in epoll_wait, and /proc then cannot tell it from the default mode's herd (each worker's epoll
watches the listener without EPOLLEXCLUSIVE in both). What it was started with can: `--thunder-lock`,
`UWSGI_THUNDER_LOCK` in its environment, or `thunder-lock` in a config file (ini, YAML, JSON, XML) named on its
command line, in its environment or in another such file, read as uWSGI reads them (uwsgi_config.py: in the
server's own root, relative paths from where it started). A file not read leaves the lock not known, and is said.

A flag given a value is off for false/off/no/0 (uwsgi_opt_true; a bare key in an ini has the value "", which is
on). `--thunder-lock=false` stops uWSGI at start (the flag takes no argument), so no running one was given it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core.kinds import LockFirst
from ...probes.process_files import Started
from .uwsgi_config import Reading, read

# uWSGI's workers (processes, no --threads) are single-threaded and inherit the master's listener: each takes the
# lock before its epoll_wait, the holder waits there, the others in FUTEX_LOCK_PI
THUNDER_LOCK = LockFirst(
    "uWSGI's workers take the thunder lock before they wait on the listener (started with it: a lock no one waits "
    "for is not seen in /proc)",
    threads=1,
    listeners=1,
)
OFF = ("false", "off", "no", "0")
KEY = "thunder-lock"


def thunder_locked(argv: Sequence[str], cwd: str | None = None, unread: list[str] | None = None) -> bool:
    """Whether uWSGI started with `argv` (and no UWSGI_* environment) in directory `cwd` takes the thunder lock
    (without `cwd` a relative path is not read). `unread` gets the config files named that were not."""
    reading = thunder_reading(Started(tuple(argv), {}, "/", cwd, cwd))
    if unread is not None:
        unread += [name for name, _ in reading.unread]
    return locked(reading)


def thunder_reading(where: Started) -> Reading:
    """Every thunder-lock setting the server started as `where` was given, in uWSGI's order, and what was not read."""
    return read(where, frozenset({KEY}))


def locked(reading: Reading) -> bool:
    """The last setting wins: the bare flag or a value other than false/off/no/0 is on."""
    on = False
    for _, value in reading.settings:
        on = value is None or value.lower() not in OFF  # strcasecmp, no trimming: "false\r" is on
    return on
