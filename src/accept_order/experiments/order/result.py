"""Whole sequential runs (their records, counters and verdict are in measures.py); a serve session's result is
in serve_result.py, compare's in compare_result.py, so that `run` makes only its own dataclass (issue 30).

Every class converts to and from plain JSON-able dicts; results/envelope.py adds the versioned envelope.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.measures import ConnectionRecord, Environment, Verdict, WorkerCounters
from ...core.records import shared_methods
from ...core.spec import SequentialLoad, ServerSpec

if TYPE_CHECKING:
    from ...results.schema import Record


@shared_methods  # repr, == and hash as @dataclass writes them, not compiled per class (issue 30)
@dataclass(frozen=True, eq=False, repr=False)
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


# What a run's file holds (results/schema.py), checked whole when a file is loaded: RUN_SHAPE, derived on its
# first use (PEP 562), so that `run`, which saves no file unless asked, does not load the file format's schema
# (a dozen dataclasses) at start-up.
def __getattr__(name: str) -> Record:
    if name != "RUN_SHAPE":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ...results.evidence_shapes import EVIDENCE
    from ...results.schema import derive
    from ...results.shapes import PORT, names_workers

    run = derive(RunResult, port=PORT, evidence=EVIDENCE, rules=(names_workers("records", "worker"),))
    globals().update(RUN_SHAPE=run)
    return run
