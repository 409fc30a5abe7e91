"""Thread pools that leave SIGINT, SIGTERM and SIGHUP to the main thread, and processes started from them that
take those signals again.

signal_order.py says why no thread but the main one may take the three (which of two came first is read from the
order their handlers run). A ThreadPoolExecutor starts its workers inside submit(), from the submitting thread,
whose mask they inherit: `BlockedPool` submits with the three blocked. The multi-host loads start ssh from such
workers, and a process inherits the mask of the thread that forks it, across exec too (subprocess keeps it), so
an ssh started there would ignore a SIGTERM or SIGHUP until it unblocked them (OpenSSH never does).
`unblocked(argv)` starts the command through a small Python that unblocks them and execs it: a preexec_fn would
do it in the forked child, but runs Python code between fork and exec in a process that has threads, which the
subprocess documentation calls unsafe (a lock another thread held at the fork is never released there), and
os.posix_spawn's setsigmask is out of reach through subprocess.Popen (it takes that path only without
close_fds or a new session). execnet itself starts ssh with subprocess.Popen(args, stdin=PIPE, stdout=PIPE),
nothing else.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from .signal_order import SIGNALS, main_thread_only

T = TypeVar("T")

# Python ignores SIGPIPE and SIGXFSZ at start-up, and an ignored signal stays ignored across exec: both back to
# the default, as subprocess's restore_signals gives the command; SIGINT's handler (Python's own, unless SIGINT
# was ignored when the tool started) to the default too, so that one pending now ends the command, as it would
# have ended it. Then the three unblocked and the command exec'd in place: the same pid, pipes and session.
_UNBLOCK_AND_EXEC = f"""\
import os, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {tuple(int(sig) for sig in SIGNALS)!r})
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.stderr.write(f"{{sys.argv[2]}}: {{exc.strerror}}\\n")
    os._exit(int(sys.argv[1]))
"""


def unblocked(argv: list[str], exec_failed: int = 127) -> list[str]:
    """`argv` run with SIGINT, SIGTERM and SIGHUP unblocked, whatever the mask of the thread that starts it.
    A command that cannot be started says why on stderr and exits `exec_failed` (the shell's 127 unless the caller
    reads another: ssh's own failures exit 255, which execnet takes for a host not reached)."""
    if not sys.executable:  # an embedded interpreter: no Python to run; the command inherits the mask
        return argv
    return [sys.executable, "-I", "-S", "-c", _UNBLOCK_AND_EXEC, str(exec_failed), *argv]


class BlockedPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor whose workers never take SIGINT, SIGTERM or SIGHUP: each starts inside a submit()
    (map() submits too) with the three blocked, and inherits that mask."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        with main_thread_only():
            return super().submit(fn, *args, **kwargs)
