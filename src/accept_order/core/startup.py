"""A Ctrl-C while the command starts: held from the package's first statement, never a traceback.

`import accept_order` runs this first. When the process is the accept-order command (its console script,
or `python -m accept_order`), SIGINT is only recorded from here on, until cli.main installs the latch
(core/signals.py), which takes it over: the command then ends with "interrupted while starting" and 130.
The command's script (scripts/accept-order, installed as `accept-order`) starts its Python part
(scripts/accept-order-python, installed beside it) with SIGINT blocked, so that a Ctrl-C during Python's own
start-up (site and its .pth files, before any line of ours) waits; that part holds SIGINT from its first
statement, unblocks it and hands what it saw to `adopt`. `python -m accept_order` has no such launcher: there a
Ctrl-C during site's import is still CPython's own "Fatal Python error".
Imported as a library, the package leaves every handler alone. Only modules the interpreter has loaded
already are used, so that this runs at once.
"""

from __future__ import annotations

import _signal  # the C module under `signal`, loaded with the interpreter: no import of enum or typing
import sys

_first: list[int] = []  # the signal recorded before the latch took over


def _hold(signum: int, frame: object) -> None:
    if not _first:
        _first.append(signum)


def _is_command() -> bool:
    """The process is accept-order's console script, or `python -m accept_order`."""
    if sys.argv and sys.argv[0].rpartition("/")[2] == "accept-order":
        return True
    argv = list(getattr(sys, "orig_argv", ()))
    return "-m" in argv and argv[argv.index("-m") + 1 :][:1] == ["accept_order"]


def hold() -> None:
    """SIGINT recorded, not raised, if the process is the command. A SIGINT ignored from the start (a
    background job of a script) is held too: the latch that takes over handles SIGINT whatever the process
    inherited (only an ignored SIGHUP, nohup's, is left alone), so a `kill -INT` ends the command the same
    way at any moment of its life."""
    if _is_command() and _signal.getsignal(_signal.SIGINT) in (_signal.default_int_handler, _signal.SIG_IGN):
        _signal.signal(_signal.SIGINT, _hold)


def adopt(first: list[int]) -> None:
    """The command's own script held SIGINT from its first statement (scripts/accept-order-python), before the
    package could be found: this module's handler holds from here on, and what the script recorded is kept."""
    _signal.signal(_signal.SIGINT, _hold)
    if first and not _first:
        _first.append(first[0])


def taken() -> int | None:
    """The signal that arrived while held, if any (for the latch to take over)."""
    return _first[0] if _first else None


hold()
