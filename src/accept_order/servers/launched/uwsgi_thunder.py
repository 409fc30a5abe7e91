"""Whether a running uWSGI took the thunder lock, from what it was started with.

Under load a thunder-locked uWSGI can have every worker running at a look: none sleeps in the lock's
FUTEX_LOCK_PI, none in epoll_wait, and /proc then cannot tell it from the default mode's herd (each worker's epoll
watches the listener without EPOLLEXCLUSIVE in both). Its command line can: `--thunder-lock`, or `thunder-lock =
true` (or a bare `thunder-lock`) in the [uwsgi] section of an ini file named on it (`--ini PATH`, `--ini=PATH`,
`--ini PATH:SECTION` for another section, or a lone `PATH.ini`), or in an ini such a file names (`ini = PATH`).
Only such a file is read, only where it is a readable regular file; anything else (yaml, xml, UWSGI_* variables,
a `scheme://` or `-` for stdin, a FIFO or a device) is not looked for, and the lock is then not known.

uWSGI reads its options in order, the later winning (core/config.c: an ini's options where the ini is named, a lone
PATH.ini after every option, as getopt_long leaves it last), and a flag given a value is off for false/off/no/0
(uwsgi_opt_true; a bare key in an ini has the value "", which is on). `--thunder-lock=false` stops uWSGI at start
(the flag takes no argument), so no running one was given it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence

from ...core.kinds import LockFirst

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
SECTION = "uwsgi"
MAX_INI_BYTES = 1 << 20  # an ini is a few lines; a larger file is not what uWSGI was given as one
# An ini naming an ini (`ini = PATH`) is read where it is named; a file that names itself (edited since the server
# read it, which would not have started) is not followed for ever
MAX_DEPTH = 8


def thunder_locked(argv: Sequence[str], cwd: str | None = None, unread: list[str] | None = None) -> bool:
    """Whether uWSGI started with `argv` takes the thunder lock (`cwd`: its working directory, where a relative
    ini path is read from; without it a relative path is not read). `unread` gets the inis named that were not."""
    on = False
    for value in _settings(argv, cwd, unread if unread is not None else []):
        on = value is None or value.strip().lower() not in OFF
    return on


def _settings(argv: Sequence[str], cwd: str | None, unread: list[str]) -> Iterator[str | None]:
    """Each thunder-lock setting in the order uWSGI reads it: None for the bare flag, else its value."""
    words = list(argv)
    lone: list[str] = []  # getopt_long moves them after every option: read last
    for i, word in enumerate(words):
        if word == f"--{KEY}":
            yield None
        elif word == "--ini" and i + 1 < len(words):
            yield from _ini(words[i + 1], cwd, 0, unread)
        elif word.startswith("--ini="):
            yield from _ini(word.split("=", 1)[1], cwd, 0, unread)
        elif word.endswith(".ini") and not word.startswith("-") and (i == 0 or words[i - 1] != "--ini"):
            lone.append(word)
    for path in lone:
        yield from _ini(path, cwd, 0, unread)


def _ini(named: str, cwd: str | None, depth: int, unread: list[str]) -> Iterator[str]:
    """The thunder-lock values of an ini's section (uWSGI's ini.c: `PATH:SECTION`, else [uwsgi]), in order, with
    those of the inis it names; none where the file is not read (then named in `unread`)."""
    if depth > MAX_DEPTH:
        return
    path, colon, section = named.rpartition(":") if ":" in named and "://" not in named else (named, "", "")
    text = _text(path, cwd) if "://" not in named else None
    if text is None:
        unread.append(named)
        return
    asked, current = section if colon and section else SECTION, None
    for raw in text.splitlines():
        line = raw.strip(" \t\r")
        if not line or line.startswith((";", "#")):
            continue
        if line.startswith("["):
            current = line[1:-1]  # ini.c: the line's last character dropped, the rest as it is
            continue
        if current != asked:
            continue
        key, _, value = line.partition("=")  # a bare key's value is ""
        key = key.strip(" \t\r")
        if key == KEY:
            yield value
        elif key == "ini":  # an immediate option: its file's lines count here
            yield from _ini(value.strip(" \t\r"), cwd, depth + 1, unread)


def _text(path: str, cwd: str | None) -> str | None:
    """A regular file's first MAX_INI_BYTES, or None. Nothing else is opened: a FIFO's open waits for a writer (and
    its read would take what the writer meant for another), a device's open can act (a tape rewinds, a watchdog
    arms), and /proc's files, 0 bytes by their size, read the kernel's state (/proc/kmsg's read takes the kernel's
    messages from their reader). `-` is uWSGI's stdin."""
    if not path or path == "-":
        return None
    if not os.path.isabs(path):
        if cwd is None:
            return None
        path = os.path.join(cwd, path)
    try:
        if not _regular(os.stat(path)):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            # the path may have been replaced between the stat and the open
            return f.read(MAX_INI_BYTES).decode("utf-8", "replace") if _regular(os.fstat(fd)) else None
        except OSError:
            return None


def _regular(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode) and info.st_size > 0
