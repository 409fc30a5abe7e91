"""Ctrl-C and SIGTERM: how a run is stopped, and how teardown is kept from being stopped halfway.

SIGTERM is raised as `Terminated`, a KeyboardInterrupt, so every `with` block and `finally` tears its
processes down on the way out exactly as for Ctrl-C. Teardown itself runs inside `deferred()`: a second
Ctrl-C or SIGTERM while children are being ended is remembered, not raised, so it can never leave a
child alive; the first signal decides the exit status.
"""

from __future__ import annotations

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
