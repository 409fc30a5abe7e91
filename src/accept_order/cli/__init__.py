"""The command line. `main` is the entry point of the command's script (scripts/accept-order) and of `python -m`.

Kept tiny on purpose: the signal latch goes in before click, rich and the harness are imported, so a
Ctrl-C, SIGTERM or SIGHUP during start-up is one line and exit 130/143/129, not a traceback from an import.
"""

from __future__ import annotations

import gc
import os
import signal
import sys

from ..core import signals
from .whole import whole_std_streams, write_all


def main(prog_name: str | None = None) -> None:
    # Start-up makes only what lives as long as the process (modules, classes, options): no cycle to collect,
    # and the collector's passes over it were 15-20% of a run's time here. cli/app.py `started` freezes it and
    # turns the collector back on once the command's module is imported, before anything is measured.
    gc.disable()
    _fill_closed_std_fds()
    whole_std_streams()  # a full non-blocking stdout or stderr is waited for, never cut short
    signals.install()  # from here on a signal is recorded, and raised only inside a command's body
    started = False
    signum: int | None = None
    try:
        try:
            from .app import main as group  # click and rich: a signal meanwhile is recorded, acted on below
        except KeyboardInterrupt as exc:  # not the latch's (it only records here)
            signum = signals.signal_of(exc)
        else:
            if signals.pending() is None:
                started = True
                group(prog_name=prog_name)
    finally:  # on every way out, an error's or a signal's exit included
        with signals.deferred():
            _end_children()
        signum = signum or signals.pending()
        signals.ignore()  # the status is decided and no child is left: a late signal changes nothing
    if signum is not None:  # arrived while held (start-up, option parsing, after the command), not raised
        words: dict[int, str] = {signal.SIGTERM: "terminated", signal.SIGHUP: "hung up"}
        word = words.get(signum, "interrupted")
        try:
            sys.stderr.flush()
            write_all(2, f"accept-order: error: {word}{'' if started else ' while starting'}\n".encode())
        except OSError:
            pass  # stderr is gone (a terminal that hung up): the status alone says how it ended
        sys.exit(128 + signum)


def _fill_closed_std_fds() -> None:
    """A standard descriptor the caller closed (`>&-`) is opened on /dev/null: otherwise the first socket or
    pipe the tool opens would take its number, and whatever a child writes to its stdout would go into it.
    sys.stdout stays None (Python saw it closed): a report is then refused as written to a closed stdout."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)


def _end_children() -> None:
    """Last resort: a child that an owner did not end (an interrupt landed before its teardown began)
    would keep multiprocessing's exit handler waiting for it forever, and a forked worker (core/forked.py)
    would outlive the command until the kernel's death signal."""
    mp = sys.modules.get("multiprocessing")
    forked = sys.modules.get("accept_order.core.forked")
    left = [*(mp.active_children() if mp is not None else ()), *(forked.active_children() if forked else ())]
    if left:
        from ..core.processes import end_processes

        end_processes(left)


__all__ = ["main"]
