"""What to say about the load generator itself (the client side of a run): a driver on a CPU all the time, drivers
waiting for a CPU the workers hold, or a client that set the pace while the workers idled."""

from __future__ import annotations

from ..core.measures import SATURATED, DriverStats
from ..core.run_warnings import RunWarning, WarningKind, warn

STARVED = 0.25  # a driver runnable but waiting for a CPU this share of its time competes with the workers


def driver_warnings(
    drivers: list[DriverStats], workers: int, cpus: int, procs: int | None = None, helpers: int = 0
) -> list[RunWarning]:
    """What to say about the load generator itself: CPU-bound (locust warns above 90% CPU), or starved
    of CPU by the workers it shares the machine with (its own delays are then in the latencies). `helpers`: the
    server's processes besides its workers (fd-pass's acceptor), which take a CPU as a worker does."""
    notes = [
        warn(WarningKind.DRIVER_SATURATED, driver=d.index, percent=100 * d.cpu_fraction) for d in drivers if d.saturated
    ]
    waited = [d for d in drivers if d.wall_s and (d.runqueue_s or 0) / d.wall_s > STARVED]
    if waited:
        share = max((d.runqueue_s or 0) / d.wall_s for d in waited)
        # with a CPU for each driver and worker, the wait was for others' processes, not the workers' CPU
        # ('latency -m fd-pass -w 1 --driver-procs 1' on 2 CPUs: the acceptor made three, and 'other processes took
        # them' was said of the run's own)
        apart = (procs or len(drivers)) + workers + helpers <= cpus
        notes.append(
            warn(
                WarningKind.DRIVERS_WAITED_FOR_OTHERS if apart else WarningKind.DRIVERS_STARVED,
                procs=procs or len(drivers),
                workers=workers,
                cpus=cpus,
                percent=100 * share,
            )
        )
    return notes


def client_bound(drivers: list[DriverStats], worker_cpu_s: float | None, wall_s: float, cpus: int) -> RunWarning | None:
    """A warning when the client, not the server, set the pace: a driver on a CPU nearly all the time while
    the workers together used less than SATURATED of the `cpus` CPUs they may run on (they idled, waiting
    for connections). None when it was not so, or the workers' CPU is not known (`worker_cpu_s` None)."""
    if worker_cpu_s is None or wall_s <= 0 or cpus < 1 or not drivers:
        return None
    client = max(d.cpu_fraction for d in drivers)
    workers = worker_cpu_s / wall_s / cpus
    if client <= SATURATED or workers >= SATURATED:
        return None
    return warn(WarningKind.CLIENT_BOUND, client=100 * client, workers=100 * min(workers, 1.0), cpus=cpus)
