"""A load generator that waited for a CPU though it and the workers had one each is not said to share the CPUs with
them: 'latency -n 50 -c 4 -w 1 --driver-procs 1' on this busy 2-CPU machine (load 12) warned 'the 1 driver process
and 1 worker share 2 CPUs: drivers waited for a CPU up to 50% of the time', blaming a sharing that one CPU each rules
out; the wait was other processes'. Where drivers and workers outnumber the CPUs the warning is as before."""

from __future__ import annotations

from accept_order.core.measures import DriverStats
from accept_order.core.run_warnings import WarningKind
from accept_order.loads.client_warnings import driver_warnings

STARVED = DriverStats(0, 4, 50, wall_s=2.0, cpu_s=0.1, runqueue_s=1.0)  # waited half its time for a CPU


def test_a_cpu_each_puts_the_wait_on_other_processes() -> None:
    (note,) = driver_warnings([STARVED], workers=1, cpus=2, procs=1)
    assert note.kind is WarningKind.DRIVERS_WAITED_FOR_OTHERS
    assert str(note) == (
        "the load generator's driver waited for a CPU up to 50% of the time though 1 driver process and 1 worker had "
        "a CPU each of the 2: other processes (host-wide) took them, so client-side delay is part of these latencies"
    )


def test_more_drivers_and_workers_than_cpus_share_them() -> None:
    (note,) = driver_warnings([STARVED, STARVED], workers=2, cpus=2, procs=2)
    assert note.kind is WarningKind.DRIVERS_STARVED
    assert str(note).startswith("the 2 driver processes and 2 workers share 2 CPUs: drivers waited")
