"""Whole sequential runs and serve sessions (their records, counters and verdict are in measures.py).

Every class converts to and from plain JSON-able dicts; results/envelope.py adds the versioned envelope.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.measures import ConnectionRecord, Environment, Verdict, WorkerCounters
from ...core.spec import SequentialLoad, ServerSpec

if TYPE_CHECKING:
    from ...results.schema import Record


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
            "counters": [c.to_dict() for c in self.counters],
            "verdict": asdict(self.verdict),
            "evidence": self.evidence,
            "unsettled": self.unsettled,
            "interrupted": self.interrupted,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        from ...results.typed import build, check_records

        server = build(ServerSpec, data["server"])
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
            "counters": [c.to_dict() for c in self.counters],
            "sequence": list(self.sequence),
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServeResult:
        from ...results.typed import build

        server = build(ServerSpec, data["server"])
        sequence = data.get("sequence", [])
        if not isinstance(sequence, list) or not all(
            isinstance(w, int) and not isinstance(w, bool) and 0 <= w < server.workers for w in sequence
        ):
            from ...core.errors import ResultFileError

            raise ResultFileError("malformed result: 'sequence' names workers this server did not have")
        return cls(
            server=server,
            environment=build(Environment, data["environment"]),
            port=data["port"],
            counters=tuple(build(WorkerCounters, c) for c in data["counters"]),
            sequence=tuple(sequence),
            evidence=data.get("evidence", {}),
        )


@dataclass(frozen=True)
class CompareResult:
    """`compare`: one sequential run per mode (or server), and the variants this machine could not run."""

    runs: tuple[RunResult, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"runs": [r.to_dict() for r in self.runs], "skipped": self.skipped}
        return doc | ({"interrupted": True} if self.interrupted else {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompareResult:
        from ...results.typed import runs_list, skipped_map

        runs = tuple(RunResult.from_dict(r) for r in runs_list(data))
        return cls(runs, skipped_map(data), bool(data.get("interrupted", False)))


# What each kind's file holds (results/schema.py), checked whole when a file is loaded: RUN_SHAPE,
# SERVE_SHAPE and COMPARE_SHAPE, derived on their first use (PEP 562), so that `run`, which saves no file
# unless asked, does not load the file format's schema (a dozen dataclasses) at start-up.
_SHAPES = ("RUN_SHAPE", "SERVE_SHAPE", "COMPARE_SHAPE")


def __getattr__(name: str) -> Record:
    if name not in _SHAPES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ...results.schema import ListOf, derive
    from ...results.shapes import EVIDENCE, PORT, SKIPPED, names_workers

    run = derive(RunResult, port=PORT, evidence=EVIDENCE, rules=(names_workers("records", "worker"),))
    serve = derive(
        ServeResult, port=PORT, evidence=EVIDENCE, optional=("sequence",), rules=(names_workers("sequence"),)
    )
    compare = derive(CompareResult, runs=ListOf(run), skipped=SKIPPED)
    globals().update(RUN_SHAPE=run, SERVE_SHAPE=serve, COMPARE_SHAPE=compare)
    return globals()[name]
