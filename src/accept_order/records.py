"""Frozen records: the plan of a run, what happened to each connection, what each worker counted.

Everything here converts to and from plain JSON-able dicts; `save`/`load` add a versioned envelope so
that results written by one version can be read (or refused with a clear message) by another.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import ResultFileError

SCHEMA = "accept-order"
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Plan:
    """What to run. Built by the CLI or the API, validated by `plan.validate_plan`."""

    mode: str = "epoll"
    workers: int = 3
    connections: int = 6
    host: str = "127.0.0.1"
    port: int = 0
    work_us: int = 0
    work_iters: int = 0  # additions per request, like the seed's Lua loop; adds to work_us
    gap_ms: float = 0.0
    backlog: int = 511
    accept_batch: int = 0  # 0: accept until EAGAIN
    timeout_s: float = 5.0
    settle: bool = True  # before each connection, wait until idle workers are really asleep
    cpus: tuple[int, ...] = ()  # pin worker i to cpus[i % len(cpus)]; empty: no pinning

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "cpus" in values:
            values["cpus"] = tuple(values["cpus"])
        return cls(**values)


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

    returns: times its wait (accept/epoll_wait/poll/select) returned; accepts: connections it accepted;
    empty: returns that found nothing to accept (EAGAIN); max_batch: most accepts in one return.
    voluntary_switches / involuntary_switches / cpu_s: psutil deltas over the run, read by the supervisor.
    """

    index: int
    pid: int
    returns: int = 0
    accepts: int = 0
    empty: int = 0
    max_batch: int = 0
    voluntary_switches: int | None = None
    involuntary_switches: int | None = None
    cpu_s: float | None = None
    affinity: tuple[int, ...] = ()

    @property
    def accepts_per_return(self) -> float:
        return self.accepts / self.returns if self.returns else 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerCounters:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["affinity"] = tuple(values.get("affinity", ()))
        return cls(**values)


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
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


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
        woken = (
            ""
            if self.woken_per_connection is None
            else f"; woken per connection {self.woken_per_connection:.1f}"
        )
        return f"{self.pattern}{fit}; fairness: Jain {self.jain:.3f}, max/min share {ratio}{woken}"


@dataclass(frozen=True)
class RunResult:
    """A whole `run`: what was asked, where, what each connection and worker did, and the verdict."""

    plan: Plan
    environment: Environment
    port: int
    records: tuple[ConnectionRecord, ...]
    counters: tuple[WorkerCounters, ...]
    verdict: Verdict
    evidence: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    unsettled: int = 0  # connections started before every idle worker was back asleep (settle timed out)

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
        per = [0] * self.plan.workers
        for worker in self.sequence:
            per[worker] += 1
        return per

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": asdict(self.plan),
            "environment": asdict(self.environment),
            "port": self.port,
            "wall_s": self.wall_s,
            "records": [asdict(r) for r in self.records],
            "counters": [asdict(c) for c in self.counters],
            "verdict": asdict(self.verdict),
            "evidence": self.evidence,
            "unsettled": self.unsettled,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        return cls(
            plan=Plan.from_dict(data["plan"]),
            environment=Environment.from_dict(data["environment"]),
            port=data["port"],
            wall_s=data.get("wall_s", 0.0),
            records=tuple(ConnectionRecord(**r) for r in data["records"]),
            counters=tuple(WorkerCounters.from_dict(c) for c in data["counters"]),
            verdict=Verdict(**data["verdict"]),
            evidence=data.get("evidence", {}),
            unsettled=data.get("unsettled", 0),
        )


def envelope(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"schema": SCHEMA, "version": SCHEMA_VERSION, "kind": kind, **payload}


def save(path: str | os.PathLike[str], kind: str, payload: dict[str, Any]) -> None:
    """Write atomically, so an interrupted run never leaves half a file behind."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    try:
        tmp.write_text(json.dumps(envelope(kind, payload), indent=1) + "\n")
        tmp.replace(target)
    except OSError as exc:
        raise ResultFileError(f"cannot write {path}: {exc.strerror or exc}") from None


def load(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """Read a result file; returns (kind, document). Refuses other schemas and newer versions."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ResultFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ResultFileError(f"{path} is not JSON: {exc.msg} at line {exc.lineno}") from None
    except UnicodeDecodeError:
        raise ResultFileError(f"{path} is not a text (JSON) file") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultFileError(f"{path} is not an accept-order result file")
    version = data.get("version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ResultFileError(
            f"{path} has schema version {version}; this accept-order reads up to {SCHEMA_VERSION}"
        )
    return str(data.get("kind")), data
