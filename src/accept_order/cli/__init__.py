"""The command line. `main` is the console script's entry point.

Kept tiny on purpose: the SIGTERM handler goes in before click, rich and the harness are imported, so a
Ctrl-C or SIGTERM during start-up is one line and exit 130/143, not a traceback from an import.
"""

from __future__ import annotations

import signal
import sys

from ..signals import Terminated, raise_terminated


def main(prog_name: str | None = None) -> None:
    signal.signal(signal.SIGTERM, raise_terminated)  # from here on, SIGTERM unwinds like Ctrl-C
    try:
        from .app import main as group
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        sys.stderr.write(f"accept-order: error: {'terminated' if terminated else 'interrupted'} while starting\n")
        sys.exit(143 if terminated else 130)
    group(prog_name=prog_name)


__all__ = ["main"]
