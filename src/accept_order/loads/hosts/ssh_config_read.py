"""What the user's ssh config sets for a destination, read with `ssh -G` (which runs nothing on the host)."""

from __future__ import annotations

import subprocess

CONFIG_READ_S = 10.0  # ssh -G only reads configs (a Match exec could run a command)
# ssh -G's words for the options the tool sets where the user's config leaves them at ssh's defaults
DEFAULTS = {"connecttimeout": ("none",), "serveraliveinterval": ("0",)}
# Read without BatchMode (ssh takes an option's first value: this one): with it, ssh's default keepalive is every 300
# s, which ssh -G shows as it shows a config's own 'ServerAliveInterval 300', and that one was overridden
UNBATCHED = ["-o", "BatchMode=no"]


def unset(options: list[str], destination: str) -> set[str]:
    """Which of DEFAULTS' options ssh with these options leaves at its default for the destination (ssh -G's
    lower-case names). ssh's own failure to read its config is left to the real ssh, whose error line names it:
    none then."""
    try:
        shown = subprocess.run(
            ["ssh", *UNBATCHED, *options, "-G", "--", destination],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CONFIG_READ_S,
            start_new_session=True,  # as the host's ssh: the terminal's Ctrl-C is the coordinator's
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    if shown.returncode != 0:
        return set()
    lines = set(shown.stdout.splitlines())
    return {name for name, defaults in DEFAULTS.items() if any(f"{name} {d}" in lines for d in defaults)}


def connect_timeout_unset(options: list[str], destination: str) -> bool:
    """Whether ssh with these options leaves ConnectTimeout to its default (none) for the destination."""
    return "connecttimeout" in unset(options, destination)
