"""The command's last step (scripts/accept-order-python): exit without tearing the interpreter down.

Once the command is over (its children ended, its file written, its report printed), Python's own exit clears
every module and frees every object one by one: 10-17 ms of a 0.15 s `run` here (issue 30), for a process about
to end, whose memory the kernel takes back whole. `leave` does what that exit does that anyone can see (the
atexit handlers, a probe's or a library's; the standard streams flushed) and then ends the process at once. It
takes Python's own way out instead, unchanged, wherever the fast one could differ: a status that is not a number
from 0 to 255 (printed by Python), a thread other than the main one still running (Python waits for it), or a
standard stream that cannot be flushed (Python reports it and exits 120). `main_and_leave` is the command's whole
run, as both its entry points (the script and `python -m accept_order`) make it."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

from . import main  # the package is imported with this module: nothing more at start-up (issue 30)


def leave(code: str | int | None) -> NoReturn:
    """sys.exit(code), without the interpreter's teardown where nothing depends on it."""
    if not (code is None or (isinstance(code, int) and 0 <= code <= 255)) or threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()  # as Python's exit runs them: LIFO, each failure printed, then cleared
    if threading.active_count() > 1:  # a handler started one: Python would wait for it
        sys.exit(code)
    # the streams in use, then the interpreter's own where they were replaced (their buffers flushed as they are freed)
    for stream in dict.fromkeys((sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            sys.exit(code)  # Python's exit flushes again, and says why it cannot
    os._exit(int(code or 0))  # an IntEnum (click's ExitStatus) as the number Python would exit with


def main_and_leave(prog_name: str | None = None) -> NoReturn:
    """The command (cli.main), then its status as sys.exit(main()) gives it, without the interpreter's teardown."""
    try:
        main(prog_name=prog_name)
    except SystemExit as exc:
        leave(exc.code)
    leave(None)
