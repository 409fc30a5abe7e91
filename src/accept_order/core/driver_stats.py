"""What one load generator's driver process did and how busy it was (a concurrent load's, part of its result).
Apart from measures.py, which still names it on first use, so that a command that drives no concurrent load
does not make this dataclass at start-up (issue 30). A leaf: it imports nothing of the package."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

SATURATED = 0.9  # a driver on a CPU more than this share of its wall time is CPU-bound (locust's threshold)


@dataclass(frozen=True)
class DriverStats:
    """What one driver process did and how busy it was. Times in seconds."""

    index: int
    slots: int
    requests: int  # finished: served + failed
    wall_s: float
    cpu_s: float
    runqueue_s: float | None = None  # runnable but waiting for a CPU (None: no /proc/self/schedstat)
    open_s: float | None = None  # when it had started every connection it was to start (a burst's open phase)
    # Open loop: connections that were due while every slot was busy, so started late (timed from when due).
    late: int | None = None
    loop: Literal["io_uring", "epoll"] | None = None  # what it drove with (loads/drivers.py); None: before 0.3
    # When it started, after the load's first driver (a busy machine runs a driver late: its open_s and wall_s
    # are its own, the load's wall_s runs from the first start). None: older files.
    started_s: float | None = None

    @property
    def cpu_fraction(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def busy_fraction(self) -> float:
        """Share of wall time it was running or runnable, i.e. not waiting for the server."""
        if self.wall_s <= 0:
            return 0.0
        return (self.cpu_s + (self.runqueue_s or 0.0)) / self.wall_s

    @property
    def saturated(self) -> bool:
        """CPU-bound: it had work every time it got the CPU, so it set the pace, not the server."""
        return self.cpu_fraction > SATURATED

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["late"] is None:  # a closed loop: nothing is due, so nothing is late (and 0.3's files lack it)
            del data["late"]
        if data["loop"] is None:
            del data["loop"]
        if data["started_s"] is None:
            del data["started_s"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DriverStats:
        return cls(
            **{k: data[k] for k in ("index", "slots", "requests", "wall_s", "cpu_s")},
            runqueue_s=data.get("runqueue_s"),  # a saved file may lack it, as its default says (None)
            open_s=data.get("open_s"),
            late=data.get("late"),
            loop=data.get("loop"),
            started_s=data.get("started_s"),
        )
