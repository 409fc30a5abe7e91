"""observe of a server in a thread of its own while a test drives it: `observed_while` runs the test's client from
observe's first snapshot (once the tracepoints are attached and the workers chosen) and ends observe when the client
has; `observing` starts observe and leaves the driving and the ending to the test; `the_result` hands back what
observe returned, or raises what it raised. Shared by the observe tests whose witness is what the clients saw.
Imported by name (`from observed_while import observed_while`), as conftest's helpers are (tests/ is on sys.path; no
test_ prefix, so pytest collects nothing here).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

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


def observing(out: list[object], **arguments: Any) -> tuple[threading.Thread, threading.Event]:
    """observe(**arguments) in a daemon thread, its result or what it raised appended to `out`: (the thread, an
    event set at its first snapshot or when it raised)."""
    began = threading.Event()

    def run() -> None:
        try:
            out.append(observe(on_snapshot=lambda _r: began.set(), **arguments))
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            out.append(exc)
            began.set()

    watcher = threading.Thread(target=run, daemon=True)
    watcher.start()
    return watcher, began


def the_result(out: list[object]) -> ObserveResult:
    """The one result observe appended to `out`; what it raised, raised here."""
    (result,) = out
    if isinstance(result, BaseException):
        raise result
    assert isinstance(result, ObserveResult)
    return result
