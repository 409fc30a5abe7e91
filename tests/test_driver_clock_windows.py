"""A driver's CPU and run-queue windows sit inside its wall window.

A tiny --rate run read 'a driver waited for a CPU 104% of the time': the run queue was read before the wall
clock at the start and after it at the end, so a preemption in between counted as waiting the wall did not see.
The order of the readings is what holds the share at or under 100%, so the test records it."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from accept_order.loads import driver_clock


def test_the_run_queue_and_cpu_are_read_inside_the_wall(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    clock = iter(range(100))

    def reading(name: str, value: Any) -> Any:
        def read() -> Any:
            order.append(name)
            return value() if callable(value) else value

        return read

    monkeypatch.setattr(driver_clock, "schedstat", reading("sched", (0, 0)))
    monkeypatch.setattr(driver_clock.time, "monotonic", reading("wall", lambda: float(next(clock))))
    monkeypatch.setattr(driver_clock.time, "process_time", reading("cpu", 0.0))
    started = driver_clock.DriverClock()
    cfg = SimpleNamespace(index=0, slots=1)
    started.report(cfg, ({}, Counter(), {}), 0, None, None, "epoll")
    walls = [i for i, name in enumerate(order) if name == "wall"]
    inside = [i for i, name in enumerate(order) if name in ("sched", "cpu")]
    assert walls[0] < min(inside) and max(inside) < walls[-1], order
