"""observe of a server while a test's client drives it: the client starts at observe's first snapshot (once the
tracepoints are attached and the workers chosen) and observe ends when the client has. Shared by the observe tests
whose witness is what the client was told (each reply naming who served it). Imported by name
(`from observed_while import observed_while`), as conftest's helpers are (tests/ is on sys.path; no test_ prefix, so
pytest collects nothing here).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from accept_order.experiments.observe.api import observe
from accept_order.experiments.observe.result import ObserveResult

TIMEOUT_S = 30.0


def observed_while(drive: Callable[[], None], pid: int | None = None, port: int | None = None) -> ObserveResult:
    """observe of `pid` or `port`, in half-second intervals, while `drive` runs in a thread of its own, from
    observe's first snapshot to drive's end (or TIMEOUT_S without a snapshot: drive is not run)."""
    began, done = threading.Event(), threading.Event()

    def client() -> None:
        try:
            if began.wait(TIMEOUT_S):
                drive()
        finally:
            done.set()

    def snapshot(_: ObserveResult) -> None:
        began.set()

    thread = threading.Thread(target=client)
    thread.start()
    result = observe(pid=pid, port=port, duration_s=120, on_snapshot=snapshot, until=done, interval_s=0.5)
    thread.join(TIMEOUT_S)
    return result
