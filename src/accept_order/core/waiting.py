"""One deadline-polling primitive (psutil's test helpers have the same idea): wait for a condition."""

from __future__ import annotations

import time
from collections.abc import Callable

POLL_S = 0.0002  # short: what is waited for (a worker falling asleep) takes tens of microseconds


def wait_for(condition: Callable[[], bool], timeout_s: float, interval_s: float = POLL_S) -> bool:
    """Poll `condition` until it is true (True) or `timeout_s` has passed (False). Checked at least once."""
    deadline = time.monotonic() + timeout_s
    while True:
        if condition():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval_s)
