"""latency --attach of HAProxy (one process, its threads the workers) warned 'the 2 driver processes and 1 workers
share 2 CPUs'. A warning's figures carry their plural endings."""

from __future__ import annotations

from accept_order.core.run_warnings import WarningKind, warn


def test_one_worker_is_one_worker() -> None:
    said = str(warn(WarningKind.DRIVERS_STARVED, procs=1, workers=1, cpus=1, percent=62.0))
    assert said.startswith("the 1 driver process and 1 worker share 1 CPU: drivers waited"), said
    said = str(warn(WarningKind.DRIVERS_STARVED, procs=2, workers=3, cpus=2, percent=62.0))
    assert said.startswith("the 2 driver processes and 3 workers share 2 CPUs: drivers waited"), said
