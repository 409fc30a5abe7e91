"""Ending child processes: shared by the worker pool and the load generator, the owners of every child."""

from __future__ import annotations

import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess


def end_processes(procs: Sequence[BaseProcess], timeout_s: float) -> None:
    """SIGTERM every started child still alive, wait up to `timeout_s` in all, SIGKILL the rest, reap all.

    A process object appended before `start()` (so that an interrupt cannot orphan it) and never started
    has no pid and is skipped.
    """
    started = [p for p in procs if p.pid is not None]
    for proc in started:
        if proc.is_alive():
            proc.terminate()
    deadline = time.monotonic() + timeout_s
    for proc in started:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.exitcode is None:
            proc.kill()
            proc.join(timeout_s)
