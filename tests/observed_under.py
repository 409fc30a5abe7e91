"""observe run in the test's own process while a load the test drives runs beside it: the load starts once the window
is open (observe's first snapshot), the window ends when the load is done, and what the load raised is raised here.

The observe tests of servers started by hand (HAProxy's multi-queue and -sf, Puma's refork, a newcomer of their own)
each wrote this thread, its events and its failure list. Imported by name, as conftest's helpers are (tests/ is on
sys.path; no test_ prefix, so pytest collects nothing here)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.run import observe

CAP_S = 120.0  # the window ends when the load is done; this only bounds a hang


def observed_under(
    load: Callable[[], None],
    kept: threading.Event | None = None,
    *,
    pid: int | None = None,
    port: int | None = None,
    on_snapshot: Callable[[object], None] | None = None,
) -> ObserveResult:
    """observe of the server behind `pid` or `port` while `load` runs in a thread of its own, from the window's first
    snapshot; the window ends when it returns. `kept`: the driving thread lives on until it is set (a process it
    started dies with it: PR_SET_PDEATHSIG is the forking thread's), so that process runs to the window's end.
    `on_snapshot`: called with each of observe's snapshots too (a load that waits for some to pass)."""
    started, done = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def snapshot(taken: object) -> None:
        if on_snapshot is not None:
            on_snapshot(taken)
        started.set()

    def drive() -> None:
        try:
            if started.wait(CAP_S):
                load()
        except BaseException as exc:  # said by the test, not lost in the thread
            failed.append(exc)
        finally:
            done.set()
            if kept is not None:
                kept.wait(CAP_S)

    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    try:
        result = observe(pid, port=port, duration_s=CAP_S, on_snapshot=snapshot, until=done)
    finally:
        started.set()  # a window that never opened: the thread need not wait out CAP_S
    if kept is None:
        driver.join(CAP_S)
    assert not failed, failed
    return result
