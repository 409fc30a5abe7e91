"""A `serve` session's result: its workers' counters and the order they accepted in (a run's is in result.py).

It converts to and from plain JSON-able dicts; results/envelope.py adds the versioned envelope.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.measures import Environment, WorkerCounters
from ...core.spec import ServerSpec

if TYPE_CHECKING:
    from ...results.schema import Record


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


# What its file holds (results/schema.py), derived on first use (PEP 562) as RUN_SHAPE is (result.py).
def __getattr__(name: str) -> Record:
    if name != "SERVE_SHAPE":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ...results.evidence_shapes import EVIDENCE
    from ...results.schema import derive
    from ...results.shapes import PORT, names_workers

    serve = derive(
        ServeResult, port=PORT, evidence=EVIDENCE, optional=("sequence",), rules=(names_workers("sequence"),)
    )
    globals().update(SERVE_SHAPE=serve)
    return serve
