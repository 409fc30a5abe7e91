"""`compare`'s result: one sequential run per mode (or server), and what could not run (a run's is in result.py).

It converts to and from plain JSON-able dicts; results/envelope.py adds the versioned envelope.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .result import RunResult

if TYPE_CHECKING:
    from ...results.schema import Record


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


# What its file holds (results/schema.py), derived on first use (PEP 562) as RUN_SHAPE is (result.py).
def __getattr__(name: str) -> Record:
    if name != "COMPARE_SHAPE":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ...results.schema import ListOf, derive
    from ...results.shapes import SKIPPED
    from .result import RUN_SHAPE

    compare = derive(CompareResult, runs=ListOf(RUN_SHAPE), skipped=SKIPPED)
    globals().update(COMPARE_SHAPE=compare)
    return compare
