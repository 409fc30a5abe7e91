"""A driver's own clock: its wall, CPU and run-queue time from its start to its report, and the report both
one-request-per-connection loops (drive_loop.py on epoll, uring_loop.py on io_uring) send their parent."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from ..core.measures import DriverStats


def schedstat() -> tuple[int, int] | None:
    """(ns on a CPU, ns runnable but waiting for one) of this (single-threaded) process."""
    try:
        with open("/proc/self/schedstat") as f:
            run, delay, _ = f.read().split()
        return int(run), int(delay)
    except (OSError, ValueError):
        return None


def schedule(cfg: Any, tick_ns: int, t0: int) -> tuple[int | None, int, int, int, int]:
    """What a loop's load starts from at `t0` (perf_counter_ns): (deadline (None: no --duration), the first tick,
    an open loop's interval between due connections (0: closed loop), the first due time (this driver's place
    among the load's: DriverConfig.offset_s), and 'a connection last ended with every slot busy' (before the
    start: never)). The one-request loops start it with their clock; kept connections once their pool is open."""
    deadline = t0 + int(cfg.duration_s * 1e9) if cfg.duration_s is not None else None
    interval_ns = int(1e9 / cfg.rate) if cfg.rate else 0
    return deadline, t0 + tick_ns, interval_ns, t0 + int(cfg.offset_s * 1e9), t0 - 1


class DriverClock:
    """Started when the loop starts: `t0` (perf_counter_ns) is the loop's time origin. The CPU and run-queue
    windows sit inside the wall window, or a short run would read more than 100% of a CPU, or a wait for one
    (a preemption between the wall's last reading and the run queue's: 'waited for a CPU 104% of the time' of a
    tiny --rate run)."""

    def __init__(self) -> None:
        self.wall0 = time.monotonic()
        self.sched0 = schedstat()
        self.cpu0 = time.process_time()
        self.t0 = time.perf_counter_ns()

    def schedule(self, cfg: Any, tick_ns: int) -> tuple[int | None, int, int, int, int]:
        """What every one-request-per-connection loop starts from, counted from the loop's start (schedule)."""
        return schedule(cfg, tick_ns, self.t0)

    def report(
        self,
        cfg: Any,
        tallies: tuple[dict[int, int], Counter[str], dict[int, int]],
        done: int,
        opened_ns: int | None,
        late: int | None,
        loop: str,
    ) -> dict[str, Any]:
        """The driver's tallies (duration µs -> count, failures by name, served per worker) as plain data for
        the pipe, with its stats: `opened_ns` when it had started every connection, `late` (open loop) the
        connections started late."""
        cpu = time.process_time() - self.cpu0
        sched1 = schedstat()
        wall = time.monotonic() - self.wall0
        runqueue = (sched1[1] - self.sched0[1]) / 1e9 if self.sched0 and sched1 else None
        counts, errors, served = tallies
        return {
            "counts": list(counts.items()),
            "errors": dict(errors),
            "served": dict(served),
            "start": self.wall0,
            "end": self.wall0 + wall,
            "stats": DriverStats(
                cfg.index,
                cfg.slots,
                done,
                round(wall, 6),
                round(cpu, 6),
                runqueue,
                None if opened_ns is None else round((opened_ns - self.t0) / 1e9, 6),
                late,
                loop,  # type: ignore[arg-type]
            ).to_dict(),
        }
