"""Child processes: how they are made, how they die with their parent, how their owners end them.

Shared by the worker pool and the load generator, the owners of every child the harness starts.
"""

from __future__ import annotations

import ctypes
import errno
import multiprocessing as mp
import signal
import time
from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess
from typing import TypeVar

from .errors import ResourceError

# fork: workers inherit the listening sockets and a shared epoll, as in a real server, and start fast.
FORK = mp.get_context("fork")
READY_TIMEOUT_S = 5.0  # a child that has not said it is ready by then is reported by name
STOP_TIMEOUT_S = 3.0  # SIGTERM, then this long to report and exit, then SIGKILL
MAX_REPLY = 4096  # bytes of a worker's answer a client reads before calling it malformed

_RESOURCE_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.EAGAIN, errno.ENOMEM, errno.ENOBUFS}
T = TypeVar("T")


def die_with_parent() -> None:
    """In a child: ask the kernel to SIGKILL it if its parent dies without cleaning up (PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def out_of_resources(what: str, call: Callable[[], T]) -> T:
    """Run `call` (a pipe, a fork); running out of descriptors or processes becomes one clear line."""
    try:
        return call()
    except OSError as exc:
        if exc.errno in _RESOURCE_ERRNOS:
            raise ResourceError(f"could not start {what}: {exc.strerror} (check `ulimit -n` and `ulimit -u`)") from None
        raise


def end_processes(procs: Sequence[BaseProcess], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM every started child still alive, wait up to `timeout_s` in all, SIGKILL the rest, reap all.

    A process object appended before `start()` (so that an interrupt cannot orphan it) and never started
    has no pid and is skipped. Callers run this with signals deferred (cli.signals.deferred), so a second
    Ctrl-C cannot cut it short and leave children alive.
    """
    started = [p for p in procs if p.pid is not None]
    for proc in started:
        if proc.exitcode is None:
            proc.terminate()
    deadline = time.monotonic() + timeout_s
    for proc in started:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.exitcode is None:
            proc.kill()
            proc.join(timeout_s)
