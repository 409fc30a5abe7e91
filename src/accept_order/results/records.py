"""Frozen records: what happened to each connection, what each worker counted, where it ran, the verdict.

Every class converts to and from plain JSON-able dicts; results/envelope.py adds the versioned envelope.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..spec import SequentialLoad, ServerSpec


@dataclass(frozen=True)
class ConnectionRecord:
    """One driven connection: who served it, or why it failed. Times in microseconds."""

    seq: int
    worker: int | None
    pid: int | None
    start_us: int  # offset from the start of the drive
    latency_us: int  # connect to end of reply (or to the failure)
    error: str | None = None

    @property
    def served(self) -> bool:
        return self.error is None and self.worker is not None


@dataclass(frozen=True)
class WorkerCounters:
    """What one worker counted in memory and reported once at the end, plus the kernel's view of it.

    wakeups: times its wait (accept/epoll_wait/poll/select) returned; accepts: connections it accepted;
    empty: wakeups that found nothing to accept (EAGAIN); max_batch: most accepts in one wakeup.
    voluntary_switches / involuntary_switches / cpu_s: psutil deltas over the run, read by the supervisor.
    """

    index: int
    pid: int
    # None: not known (a server that does not count them itself, such as nginx)
    wakeups: int | None = 0
    accepts: int | None = 0
    empty: int | None = 0
    max_batch: int | None = 0
    voluntary_switches: int | None = None
    involuntary_switches: int | None = None
    cpu_s: float | None = None
    affinity: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerCounters:
        from .typed import build

        return build(cls, data)


@dataclass(frozen=True)
class Environment:
    """Where a result was measured: enough to tell two machines' results apart."""

    system: str
    kernel: str
    machine: str
    cpu_count: int
    somaxconn: int | None
    python: str
    hostname: str
    started_at: str

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Environment:
        from .typed import build

        return build(cls, data)


@dataclass(frozen=True)
class Verdict:
    """The pattern a run showed, how well the best model fits, and the kernel mechanism behind it."""

    pattern: str
    model: str | None
    fit: int  # informative connections the model predicted
    informative: int  # connections where more than one worker was idle
    why: str
    jain: float
    max_min: float | None  # max share / min share; None when some worker served none
    expected: bool  # the pattern is the one the mode's mechanism predicts
    woken_per_connection: float | None = None  # workers' sleeps (voluntary switches) per served connection

    def line(self) -> str:
        ratio = "inf" if self.max_min is None else f"{self.max_min:.2f}"
        if not self.informative:
            fit = ""
        elif self.model:
            fit = f", {self.fit}/{self.informative} informative connections fit"
        else:
            fit = f", best idle-order model fits only {self.fit}/{self.informative}"
        woken = "" if self.woken_per_connection is None else f"; woken per connection {self.woken_per_connection:.1f}"
        return f"{self.pattern}{fit}; fairness: Jain {self.jain:.3f}, max/min share {ratio}{woken}"


@dataclass(frozen=True)
class RunResult:
    """A whole sequential run: what served, what drove, where, each connection and worker, the verdict."""

    server: ServerSpec
    load: SequentialLoad
    environment: Environment
    port: int
    records: tuple[ConnectionRecord, ...]
    counters: tuple[WorkerCounters, ...]
    verdict: Verdict
    evidence: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    unsettled: int = 0  # connections started before every idle worker was back asleep (settle timed out)
    interrupted: bool = False  # Ctrl-C or SIGTERM ended the load early: the records are what it got to

    @property
    def mode(self) -> str:
        return self.server.mode

    @property
    def sequence(self) -> list[int]:
        """Serving worker of each served connection, in driving order."""
        return [r.worker for r in self.records if r.worker is not None and r.error is None]

    @property
    def served(self) -> int:
        return sum(1 for r in self.records if r.served)

    @property
    def failed(self) -> int:
        return len(self.records) - self.served

    @property
    def counts(self) -> list[int]:
        """Connections served per worker index."""
        per = [0] * self.server.workers
        for worker in self.sequence:
            per[worker] += 1
        return per

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server.to_dict(),
            "load": self.load.to_dict(),
            "environment": asdict(self.environment),
            "port": self.port,
            "wall_s": self.wall_s,
            "records": [asdict(r) for r in self.records],
            "counters": [asdict(c) for c in self.counters],
            "verdict": asdict(self.verdict),
            "evidence": self.evidence,
            "unsettled": self.unsettled,
            "interrupted": self.interrupted,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        from .typed import build, check_records, check_server

        server = check_server(build(ServerSpec, data["server"]))
        records = tuple(build(ConnectionRecord, r) for r in data["records"])
        check_records(records, server.workers)
        return cls(
            server=server,
            load=build(SequentialLoad, data["load"]),
            environment=build(Environment, data["environment"]),
            port=data["port"],
            wall_s=data.get("wall_s", 0.0),
            records=records,
            counters=tuple(build(WorkerCounters, c) for c in data["counters"]),
            verdict=build(Verdict, data["verdict"]),
            evidence=data.get("evidence", {}),
            unsettled=data.get("unsettled", 0),
            interrupted=bool(data.get("interrupted", False)),
        )


@dataclass(frozen=True)
class ServeResult:
    """A `serve` session: connections made by hand, counted by the workers (the sequence is by accept
    time, from the workers' own clocks, since no client of ours saw the connections)."""

    server: ServerSpec
    environment: Environment
    port: int
    counters: tuple[WorkerCounters, ...]
    sequence: tuple[int, ...]
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server.to_dict(),
            "environment": asdict(self.environment),
            "port": self.port,
            "counters": [asdict(c) for c in self.counters],
            "sequence": list(self.sequence),
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServeResult:
        from .typed import build, check_server

        server = check_server(build(ServerSpec, data["server"]))
        sequence = data.get("sequence", [])
        if not isinstance(sequence, list) or not all(
            isinstance(w, int) and not isinstance(w, bool) and 0 <= w < server.workers for w in sequence
        ):
            from ..errors import ResultFileError

            raise ResultFileError("malformed result: 'sequence' names workers this server did not have")
        return cls(
            server=server,
            environment=build(Environment, data["environment"]),
            port=data["port"],
            counters=tuple(build(WorkerCounters, c) for c in data["counters"]),
            sequence=tuple(sequence),
            evidence=data.get("evidence", {}),
        )
