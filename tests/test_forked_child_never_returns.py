"""core/forked.py: a forked child never returns from ForkedProcess.start(), whatever is raised on its way out.

multiprocessing's fork start ends the child in a `finally: os._exit(code)`; aec5bec's child called
os._exit(self._run()), so an exception out of _run (the failure's report written to a stderr that cannot take it, a
signal handler's exception landing in the last flush) climbed out of start() in the child and ran the parent's code
from there: the pool's finally blocks and __exit__ (ending its siblings), the command's error line and exit."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import pytest

from accept_order.core import forked

WAIT_S = 30.0  # a bound for what happens at once (a busy machine may take long to schedule the child)
ESCAPED = 99  # the exit code of a child caught running the parent's code after start()


class _Unwritable:
    """A standard stream that cannot take a write (stderr on a full disk: OSError ENOSPC)."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        pass


class _Interrupted(Exception):
    """What a worker's SIGTERM handler raises (servers/worker._Stop), here from the child's last flush."""


class _FlushRaisesInChild:
    def __init__(self, parent: int) -> None:
        self.parent = parent

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        if os.getpid() != self.parent:
            raise _Interrupted


def _fail() -> None:
    raise RuntimeError("worker broke")


def _return() -> None:
    pass


def _exit_code_of(target: Callable[[], None]) -> int | None:
    parent = os.getpid()
    child = forked.ForkedProcess(target, (), "test-child")
    try:
        child.start()
    finally:
        if os.getpid() != parent:  # the child, in the parent's code: end it here, not in pytest
            os._exit(ESCAPED)
    child.join(WAIT_S)
    return child.exitcode


def test_a_child_whose_failure_cannot_be_written_ends_with_code_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", _Unwritable())
    assert _exit_code_of(_fail) == 1


def test_a_child_interrupted_in_its_last_flush_ends_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", _FlushRaisesInChild(os.getpid()))
    assert _exit_code_of(_return) == 1
