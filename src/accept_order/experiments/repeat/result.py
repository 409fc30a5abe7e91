"""A repeated comparison's result: every round's runs (of one experiment), the variants skipped, and the
machine's state before and after."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

LATENCY_KINDS = ("latency", "latency-compare", "sweep")


@dataclass(frozen=True)
class RepeatResult:
    """`--repeat N`: `of` names the experiment repeated; `rounds[i][j]` is round i's run of variant j.
    `cpus` (not saved) is what the machine warnings compare the load average with."""

    of: str
    rounds: tuple[tuple[Any, ...], ...]
    skipped: dict[str, str] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    cpus: int = 1
    interrupted: bool = False

    @property
    def latency(self) -> bool:
        return self.of in LATENCY_KINDS

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "of": self.of,
            "rounds": [[r.to_dict() for r in row] for row in self.rounds],
            "skipped": self.skipped,
            "machine": self.machine,
        }
        return doc | ({"interrupted": True} if self.interrupted else {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RepeatResult:
        from ...results.latency import LatencyResult
        from ...results.records import RunResult
        from ...results.typed import skipped_map

        of = data["of"]
        build: Any = LatencyResult.from_dict if of in LATENCY_KINDS else RunResult.from_dict
        rounds = tuple(tuple(build(r) for r in row) for row in data["rounds"])
        cpus = rounds[0][0].environment.cpu_count if rounds and rounds[0] else 1
        return cls(of, rounds, skipped_map(data), data.get("machine", {}), cpus, bool(data.get("interrupted", False)))


def repeated(
    of: str,
    rounds: Sequence[Sequence[Any]],
    skipped: dict[str, str],
    machine: dict[str, Any],
    cpus: int,
    interrupted: bool = False,
) -> RepeatResult:
    """The result a `--repeat` run saves, from the rounds that finished."""
    return RepeatResult(of, tuple(tuple(row) for row in rounds), skipped, machine, cpus, interrupted)
