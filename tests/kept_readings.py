"""A reading a module fixture takes once for several tests, kept with what it raised, so that a reader that breaks
fails the tests that read it and no other.

test_attached_threaded_worker_cpu and test_thread_leader_cpu_own share one worker and one spin, read by each
test's own reader made in the fixture (9b3e449). A reader raising there failed the fixture, and with it every test
of the file: WorkerUsage.of raising (as a broken reader would) gave 7 errors across the two files, 5 of them in tests
that do not use it, where the tests as they were before the sharing failed 2, its own. Imported by name, as
conftest's helpers are (no test_ prefix: pytest collects nothing here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Taken(Generic[T]):
    """What a reading gave, or the exception it raised (raised again by `get`, in the test that reads it)."""

    value: T | None
    error: Exception | None

    def get(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


def taken(read: Callable[[], T]) -> Taken[T]:
    """`read()` now, kept for the test that asks for it, with what it raised if it did."""
    try:
        return Taken(read(), None)
    except Exception as exc:  # any: it is the reading test's to report, not the fixture's
        return Taken(None, exc)
