"""Whether a running uWSGI took the thunder lock, from what it was started with.

Under load a thunder-locked uWSGI can have every worker running at a look: none sleeps in the lock's
FUTEX_LOCK_PI, none in epoll_wait, and /proc then cannot tell it from the default mode's herd (each worker's epoll
watches the listener without EPOLLEXCLUSIVE in both). Its command line can: `--thunder-lock`, or `thunder-lock =
true` in the [uwsgi] section of an ini file named on it (`--ini PATH`, `--ini=PATH`, or a lone `PATH.ini`). Only
such a file is read, and only where it is readable; anything else (yaml, xml, UWSGI_* variables, an ini's
`PATH:section`, its `include`s) is not looked for, and the lock is then not known.

uWSGI reads its options in order, the later winning, and a flag given a value is off for false/off/no/0
(uwsgi_opt_true); an ini's lines count where the ini is named.
"""

from __future__ import annotations

import os
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
MAX_INI_BYTES = 1 << 20  # an ini is a few lines; a larger file is not what uWSGI was given as one


def thunder_locked(argv: Sequence[str], cwd: str | None = None) -> bool:
    """Whether uWSGI started with `argv` takes the thunder lock (`cwd`: its working directory, where a relative
    ini path is read from; without it a relative path is not read)."""
    on = False
    for value in _settings(argv, cwd):
        on = value is None or value.strip().lower() not in OFF
    return on


def _settings(argv: Sequence[str], cwd: str | None) -> Iterator[str | None]:
    """Each thunder-lock setting in the order uWSGI reads it: None for the bare flag, else its value."""
    words = list(argv)
    for i, word in enumerate(words):
        if word in (f"--{KEY}", f"-{KEY}"):
            yield None
        elif word.startswith(f"--{KEY}="):
            yield word.split("=", 1)[1]
        elif word == "--ini" and i + 1 < len(words):
            yield from _ini(words[i + 1], cwd)
        elif word.startswith("--ini="):
            yield from _ini(word.split("=", 1)[1], cwd)
        elif word.endswith(".ini") and not word.startswith("-") and (i == 0 or words[i - 1] != "--ini"):
            yield from _ini(word, cwd)


def _ini(path: str, cwd: str | None) -> Iterator[str]:
    """The thunder-lock values of an ini's [uwsgi] section, in order; none where the file cannot be read."""
    if not os.path.isabs(path):
        if cwd is None:
            return
        path = os.path.join(cwd, path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(MAX_INI_BYTES)
    except OSError:
        return
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == "uwsgi" and "=" in line and not line.startswith((";", "#")):
            key, value = line.split("=", 1)
            if key.strip() == KEY:
                yield value
