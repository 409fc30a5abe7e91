"""`atlas`'s result: one row per server and mode (and round), what each measurement found, or why it did not run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ...core.measures import Environment
from ...core.text import plural
from ...results.schema import Integer, ListOf, Record, SchemaError, child, derive
from ...results.shapes import CONCURRENT_LOAD, SKIPPED, WORKERS


@dataclass(frozen=True)
class AtlasRow:
    """One server in one mode, measured the same way as every other row."""

    server: str  # the server kind (nginx, haproxy, ...)
    mode: str  # its mode, in its own name
    setting: str  # what selects this mode in the server's own configuration
    round: int = 1
    seen_as: str | None = None  # the mechanism inspect read from /proc while it ran (None: not seen)
    order: str | None = None  # the pattern at idle (sequential connections), from the records
    order_fit: str | None = None  # how many informative connections the pattern's model predicted ("11/12")
    expected: bool | None = None  # the pattern is the one the mode's mechanism predicts
    woken: float | None = None  # workers woken per connection, where the server's wakeups can be counted
    served: tuple[int, ...] = ()  # per worker, under the load
    failed: int = 0  # connections of the load that failed
    p99_us: int | None = None  # under the load
    loop: str | None = None  # the load generator's loop under the load (core/totals.loops_ran); None: before 0.3
    error: str | None = None  # why a measurement stopped (the row keeps what was measured before)

    @property
    def jain(self) -> float | None:
        from ...analysis.fairness import jain_index

        return jain_index(self.served) if sum(self.served) else None

    @property
    def busiest(self) -> float | None:
        """The busiest worker's share of what the load got served."""
        total = sum(self.served)
        return max(self.served) / total if total else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "served": list(self.served)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AtlasRow:
        from ...results.typed import build

        return build(cls, dict(data))


@dataclass(frozen=True)
class AtlasResult:
    rows: tuple[AtlasRow, ...]
    settings: dict[str, Any]  # what every row shared: workers, connections at idle, the load
    environment: Environment | None
    skipped: dict[str, str] = field(default_factory=dict)  # server (or "server mode") -> why it did not run
    interrupted: bool = False
    # A run stopped early: the server and mode the stop cut short ("builtin epoll"; None: it came between two, or
    # after a row's measurements had finished) and the variants of a round. Written only when interrupted.
    cut: str | None = None
    variants: int | None = None

    def to_dict(self) -> dict[str, Any]:
        doc = {
            "rows": [r.to_dict() for r in self.rows],
            "settings": dict(self.settings),
            "environment": asdict(self.environment) if self.environment else None,
            "skipped": dict(self.skipped),
        }
        if not self.interrupted:
            return doc
        said = {"cut": self.cut, "variants": self.variants}
        return doc | {"interrupted": True} | {key: value for key, value in said.items() if value is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AtlasResult:
        from ...results.typed import build, skipped_map

        rows = data["rows"]
        if not isinstance(rows, list):
            raise TypeError("'rows' is not a list")
        env = data.get("environment")
        settings = data.get("settings", {})
        if not isinstance(settings, dict):
            raise TypeError("'settings' is not an object")
        return cls(
            tuple(AtlasRow.from_dict(r) for r in rows),
            dict(settings),
            build(Environment, env) if env else None,
            skipped_map(dict(data)),
            bool(data.get("interrupted", False)),
            data.get("cut"),
            data.get("variants"),
        )


def _rows_fit_workers(doc: Mapping[str, Any], at: str) -> None:
    workers = doc.get("settings", {}).get("workers")
    for index, row in enumerate(doc["rows"]):
        if workers is not None and len(row.get("served", [])) > workers:
            where = child(child(child(at, "rows"), index), "served")
            raise SchemaError(where, f"has {len(row['served'])} entries, one per worker, but the rows had {workers}")


def _stop_fits_rows(doc: Mapping[str, Any], at: str) -> None:
    """A stopped run's `variants` (per round) must hold its rows and the one it cut short: the report divides the
    rows by it into rounds, and a 0 or too small a count read 'Interrupted in round 5 of 2'."""
    variants = doc.get("variants")
    if variants is None:
        return
    repeat = doc.get("settings", {}).get("repeat", 1)
    rows = len(doc["rows"]) + (doc.get("cut") is not None)
    if variants < 1 or rows > variants * repeat:
        held = f"{len(doc['rows'])} rows" + (" and one cut short" if doc.get("cut") is not None else "")
        raise SchemaError(
            child(at, "variants"), f"is {variants} per round, but the file has {held} in {plural(repeat, 'round')}"
        )


# atlas.run's settings, as it saves them (every one optional: the report reads what is there)
_SETTINGS = Record(
    {"workers": WORKERS, "connections": Integer(), "load": CONCURRENT_LOAD, "repeat": Integer(1, 1 << 20)}
)
ATLAS_SHAPE = derive(
    AtlasResult,
    rows=ListOf(derive(AtlasRow)),
    settings=_SETTINGS,
    skipped=SKIPPED,
    optional=("settings", "environment"),
    rules=(_rows_fit_workers, _stop_fits_rows),
)
