"""Ctrl-C and SIGTERM: how a run is stopped, and how teardown is kept from being stopped halfway.

SIGTERM is raised as `Terminated`, a KeyboardInterrupt, so every `with` block and `finally` tears its
processes down on the way out exactly as for Ctrl-C. Teardown itself runs inside `deferred()`: a second
Ctrl-C or SIGTERM while children are being ended is remembered, not raised, so it can never leave a
child alive; the first signal decides the exit status.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every owner of child processes ends them on the way out."""


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def deferred(swallow: bool = False) -> Iterator[None]:
    """Run a block that must finish (ending children) with SIGINT and SIGTERM held back.

    A signal that arrives inside is re-raised when the block ends, unless an exception (usually the
    first Ctrl-C) is already on its way out, or `swallow` says the run is already stopping because of an
    earlier one: then that first signal stands.
    """
    if not _main_thread():
        yield
        return
    arrived: list[int] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        arrived.append(signum)

    previous = {sig: signal.signal(sig, remember) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if arrived and not swallow and sys.exc_info()[0] is None:
            raise Terminated if arrived[0] == signal.SIGTERM else KeyboardInterrupt


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises Terminated (restored afterwards)."""
    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stopping() -> None:
    """The first signal has started an orderly stop that keeps a partial result: from now on SIGINT and
    SIGTERM are only noted, so a second one cannot cut the stop short anywhere (the stop is bounded by
    the processes' timeouts). The command's wrapper (cli.app.handle_errors) restores the handlers."""
    if _main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda signum, frame: None)


class ArrivalOrder:
    """Which of SIGINT and SIGTERM arrived first, as the kernel delivered them.

    When both are pending by the time the main thread runs (on a loaded machine, 10 ms apart is enough),
    CPython runs their handlers in signal-number order, and the second handler's exception can replace
    the first one's while it unwinds; the exception type then names the wrong signal. The C-level handler
    writes each signal number to the wakeup fd as it arrives, so the first byte there is the truth.
    """

    def __enter__(self) -> ArrivalOrder:
        self._fds: tuple[int, int] | None = None
        self._previous = -1
        if _main_thread():
            try:
                read, write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
                self._previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
                self._fds = (read, write)
            except (OSError, ValueError, AttributeError):
                self._fds = None
        return self

    def first(self) -> int | None:
        """SIGINT or SIGTERM, whichever arrived first since __enter__; None if neither was seen."""
        if self._fds is None:
            return None
        try:
            data = os.read(self._fds[0], 4096)
        except OSError:
            return None
        return next((b for b in data if b in (signal.SIGINT, signal.SIGTERM)), None)

    def __exit__(self, *exc: object) -> None:
        if self._fds is not None:
            signal.set_wakeup_fd(self._previous)
            for fd in self._fds:
                os.close(fd)
