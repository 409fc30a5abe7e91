"""observe reads a worker process's every thread's switches at each tick only while that costs at most its sampling
BUDGET of an interval: 8 workers of 1,000 threads took 0.84 CPU-s a 1 s tick, and ticks and samples share one loop
(review RJ of 883be5e: 15 queue samples in 6 s where 58 were due). Over budget, a tick reads the CPU (the process's
clock) and keeps the switches as last read; the start and the last tick read every thread whatever it costs."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from accept_order.experiments.observe.sampling import BUDGET, PacedUsage
from accept_order.experiments.observe.server import Unit


@contextlib.contextmanager
def _switched_thread(times: int) -> Iterator[None]:
    """A thread of this process that has blocked `times` times (each a voluntary switch), handed a turn by the main
    one, and lives on, asleep, until the block ends: its switches are its own task's to read (a thread that has
    exited is in no task's count, and whether the main thread's waits blocked depends on the machine)."""
    ping, pong, done = threading.Event(), threading.Event(), threading.Event()

    def other() -> None:
        for _ in range(times):
            ping.wait(10)
            ping.clear()
            pong.set()
        done.wait(30)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        for _ in range(times):
            ping.set()
            pong.wait(10)
            pong.clear()
        yield
    finally:
        done.set()
        thread.join(10)


def test_a_tick_over_budget_keeps_the_switches_and_the_ends_read_them() -> None:
    units = [Unit(os.getpid())]
    paced = PacedUsage(interval_s=1.0)
    [start] = paced.read(units, every=True)
    assert start is not None
    keeper = threading.Event()
    idle = threading.Thread(target=keeper.wait, args=(30,))  # a thread that outlives the readings: re-read each time
    idle.start()
    try:
        paced.cost_s = 2 * BUDGET * paced.interval_s  # the last reading of every thread was over budget
        with _switched_thread(50):
            [tick] = paced.read(units)
            assert tick is not None and tick.voluntary == start.voluntary  # kept as last read
            [end] = paced.read(units, every=True)
            assert end is not None and end.voluntary >= start.voluntary + 50  # the last tick reads them all
        paced.cost_s = 0.0  # cheap: every tick reads them
        before = end.voluntary
        with _switched_thread(50):
            [cheap] = paced.read(units)
            assert cheap is not None and cheap.voluntary >= before + 50
    finally:
        keeper.set()
        idle.join(10)
