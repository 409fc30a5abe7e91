"""A launched server's private directory (its config and logs), and the removal of those whose tool is gone.
Its modules (tempfile, shutil, secrets, psutil) are imported where a server is launched: `modes` and
`inspect` import every kind, and with it this module (issue 30)."""

from __future__ import annotations

import os

from ...core.reaper import REAPER

DIRECTORY_PREFIX = "accept-order-"


def remove_stale_directories() -> None:
    """Private directories of earlier runs whose tool is gone (killed before it, and its reaper, could
    remove them): `accept-order-NAME-PID-XXXX` in the temp directory, PID no longer running."""
    import shutil
    import tempfile

    import psutil

    base = tempfile.gettempdir()
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        parts = name[len(DIRECTORY_PREFIX) :].split("-") if name.startswith(DIRECTORY_PREFIX) else []
        if len(parts) != 3 or not parts[1].isdigit() or int(parts[1]) == os.getpid():
            continue
        if not psutil.pid_exists(int(parts[1])):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)


def private_directory(prefix: str) -> str:
    """A new directory only we can enter (as mkdtemp makes), named with our pid so that a later run can
    tell one whose owner is gone (see above). The reaper is told of it before it exists: killed between
    the two, we would leave it behind (seen: 1 run in 8 when killed just as the server was launched)."""
    import secrets  # here: hashlib would load with every kind's module at start-up
    import tempfile

    base = tempfile.gettempdir()
    for _ in range(100):
        path = os.path.join(base, f"{prefix}{secrets.token_hex(4)}")
        REAPER.watch_directory(path)
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            REAPER.done_directory(path)  # someone else's: never ours to remove
    raise FileExistsError(f"no free name for a private directory {prefix}* in {base}")
