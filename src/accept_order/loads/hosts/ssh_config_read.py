"""What the user's ssh config sets for a destination, read with `ssh -G` (which runs nothing on the host)."""

from __future__ import annotations

import subprocess

CONFIG_READ_S = 10.0  # ssh -G only reads configs (a Match exec could run a command)


def connect_timeout_unset(options: list[str], destination: str) -> bool:
    """Whether ssh with these options leaves ConnectTimeout to its default (none) for the destination. ssh's own
    failure to read its config is left to the real ssh, whose error line names it."""
    try:
        shown = subprocess.run(
            ["ssh", *options, "-G", "--", destination],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CONFIG_READ_S,
            start_new_session=True,  # as the host's ssh: the terminal's Ctrl-C is the coordinator's
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return shown.returncode == 0 and "connecttimeout none" in shown.stdout.splitlines()
