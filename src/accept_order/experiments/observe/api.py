"""observe's Python API."""

from __future__ import annotations

import threading
from collections.abc import Callable

from .result import ObserveResult
from .run import observe as run_observe


def observe(
    pid: int | None = None,
    port: int | None = None,
    duration_s: float = 30.0,
    on_snapshot: Callable[[ObserveResult], None] | None = None,
    trace: bool = True,
    interval_s: float = 1.0,
    until: threading.Event | None = None,
) -> ObserveResult:
    """Watch a running server's own traffic for `duration_s` (or until `until` is set), nothing driven and
    nothing signalled: per worker what it accepted, its CPU, the listen queue. `on_snapshot` gets the result
    so far every `interval_s`. Ctrl-C or SIGTERM: RunInterrupted carrying the result so far."""
    return run_observe(pid, port, duration_s, interval_s, trace, on_snapshot, until)
