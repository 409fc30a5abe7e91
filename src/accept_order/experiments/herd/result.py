"""The herd comparison's result: every mode's sequential run with the same settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...analysis.herd import HerdRow, herd_row
from ...core.spec import DEFAULT_BACKLOG
from ...results.schema import ListOf, derive
from ...results.shapes import SKIPPED, WORKERS
from ...servers.registry import known_mode
from ..order.result import RUN_SHAPE, RunResult


@dataclass(frozen=True)
class HerdResult:
    """Every mode's run with the same settings, and the modes this machine could not run."""

    workers: int
    connections: int
    work_us: int
    backlog: int
    runs: tuple[RunResult, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False  # Ctrl-C or SIGTERM ended it early: `runs` are the modes that finished

    @property
    def rows(self) -> list[HerdRow]:
        return [herd_row(r, known_mode(r.server.kind, r.server.mode)) for r in self.runs]

    def row(self, mode: str) -> HerdRow:
        """The herd table's line for `mode` (KeyError if it did not run)."""
        for r in self.runs:
            if r.server.mode == mode:
                return herd_row(r, known_mode(r.server.kind, r.server.mode))
        raise KeyError(mode)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "workers": self.workers,
            "connections": self.connections,
            "work_us": self.work_us,
            "backlog": self.backlog,
            "runs": [r.to_dict() for r in self.runs],
            "skipped": dict(self.skipped),
        }
        return doc | ({"interrupted": True} if self.interrupted else {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HerdResult:
        return cls(
            workers=data["workers"],
            connections=data["connections"],
            work_us=data.get("work_us", 0),
            backlog=data.get("backlog", DEFAULT_BACKLOG),
            runs=tuple(RunResult.from_dict(r) for r in data["runs"]),
            skipped=dict(data.get("skipped", {})),
            interrupted=bool(data.get("interrupted", False)),
        )


HERD_SHAPE = derive(
    HerdResult, workers=WORKERS, runs=ListOf(RUN_SHAPE), skipped=SKIPPED, optional=("work_us", "backlog")
)
