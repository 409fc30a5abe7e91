"""A repeated comparison's result: every round's runs (of one experiment), the variants skipped, and the
machine's state before and after."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.run_warnings import RunWarning, WarningKind, warn
from ...results.evidence_shapes import MACHINE
from ...results.schema import Anything, Integer, ListOf, OneOf, SchemaError, child, derive
from ...results.shapes import NOTES, SKIPPED
from .kinds import REPEATED, repeated_of

STEAL = 0.05  # the hypervisor took this share of the CPUs during the runs: figures from a stolen machine
BUSY = 0.5  # a 1-minute load average of half the CPUs before the runs: other work is competing


@dataclass(frozen=True)
class RepeatResult:
    """`--repeat N`: `of` names the experiment repeated; `rounds[i][j]` is round i's run of variant j.
    `cpus` (not saved) is what the machine warnings compare the load average with; `notes`, what the
    command did to make room for the runs (burst: the open-file limit)."""

    of: str
    rounds: tuple[tuple[Any, ...], ...]
    skipped: dict[str, str] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    cpus: int = 1
    interrupted: bool = False
    notes: tuple[str, ...] = ()
    stopped: str | None = None  # an error ended the runs after some rounds: why (the rounds are those before it)
    # The round a stop cut short: its variants that finished, in order, then the part of the one it stopped (marked
    # interrupted or stopped) when it kept one. Kept apart from `rounds`: its variants are not comparable with theirs.
    cut: tuple[Any, ...] = ()
    asked: int | None = None  # the rounds asked for (None: a file from before that said so only by its rounds)
    variants: int | None = None  # how many each round runs (None: unknown, in a file from before)

    @property
    def once(self) -> bool:
        """One round was asked for (ramp --modes without --repeat): nothing was interleaved or repeated."""
        return self.asked == 1

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "of": self.of,
            "rounds": [[r.to_dict() for r in row] for row in self.rounds],
            "skipped": self.skipped,
            "machine": self.machine,
        }
        doc |= {"notes": list(self.notes)} if self.notes else {}
        doc |= {"stopped": self.stopped} if self.stopped is not None else {}
        doc |= {"cut_round": [r.to_dict() for r in self.cut]} if self.cut else {}
        # a run that ended as asked says how many rounds by its rounds (its file as before)
        ended_early = self.interrupted or self.stopped is not None
        doc |= {"rounds_asked": self.asked} if ended_early and self.asked is not None else {}
        doc |= {"variants": self.variants} if ended_early and self.variants is not None else {}
        return doc | ({"interrupted": True} if self.interrupted else {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RepeatResult:
        from ...results.typed import skipped_map

        of = data["of"]
        build = repeated_of(of).load
        rounds = tuple(tuple(build(r) for r in row) for row in data["rounds"])
        cut = tuple(build(r) for r in data.get("cut_round", []))
        env = next((e for row in (*rounds, cut) for r in row if (e := r.environment) is not None), None)
        cpus = env.cpu_count if env is not None else 1
        notes = tuple(str(n) for n in data.get("notes", []))
        interrupted = bool(data.get("interrupted", False))
        stopped = data.get("stopped")
        asked = data.get("rounds_asked", None if interrupted or stopped is not None else len(rounds))
        variants = data.get("variants", len(rounds[0]) if rounds else None)
        machine = data.get("machine", {})
        return cls(of, rounds, skipped_map(data), machine, cpus, interrupted, notes, stopped, cut, asked, variants)


def repeated(
    of: str,
    rounds: Sequence[Sequence[Any]],
    skipped: dict[str, str],
    machine: dict[str, Any],
    cpus: int,
    interrupted: bool = False,
    notes: Sequence[str] = (),
    stopped: str | None = None,
    cut: Sequence[Any] = (),
    asked: int | None = None,
    variants: int | None = None,
) -> RepeatResult:
    """The result a `--repeat` run saves, from the rounds that finished (`stopped`: the error that ended it;
    `cut`: the runs of the round the stop cut short; `asked`: the rounds asked for, of `variants` each)."""
    rows = tuple(tuple(row) for row in rounds)
    stop = (interrupted, tuple(notes), stopped, tuple(cut), asked, variants)
    return RepeatResult(of, rows, skipped, machine, cpus, *stop)


def machine_warnings(before: dict[str, Any], after: dict[str, Any], cpus: int) -> list[RunWarning]:
    """pyperf-style warnings about the machine itself: busy, or moving, or stolen from."""
    notes = []
    # The runs' own workers and load generator raise the load average while they run: only what it was
    # before they started says whether other work was competing.
    la0 = before.get("load_average")
    if la0 and la0[0] >= BUSY * cpus:
        notes.append(warn(WarningKind.MACHINE_BUSY, load=la0[0], cpus=cpus))
    j0, j1 = before.get("cpu_jiffies"), after.get("cpu_jiffies")
    if j0 and j1 and j1["total"] > j0["total"]:
        steal = (j1["steal"] - j0["steal"]) / (j1["total"] - j0["total"])
        if steal >= STEAL:
            notes.append(warn(WarningKind.STEAL, percent=100 * steal))
    return notes


def _rounds_of_their_kind(doc: Mapping[str, Any], at: str) -> None:
    """Every round holds the same number of runs (one per variant), each a run of the kind repeated."""
    shape = repeated_of(doc["of"]).shape
    rounds = doc["rounds"]
    for i, row in enumerate(rounds):
        if len(row) != len(rounds[0]):
            raise SchemaError(child(at, "rounds"), f"round {i} has {len(row)} runs, round 0 {len(rounds[0])}")
        for j, run in enumerate(row):
            shape.check(run, child(child(child(at, "rounds"), i), j))
    cut = doc.get("cut_round", [])
    if rounds and len(cut) > len(rounds[0]):
        raise SchemaError(child(at, "cut_round"), f"{len(cut)} runs, more than a round's {len(rounds[0])}")
    for j, run in enumerate(cut):
        shape.check(run, child(child(at, "cut_round"), j))


def _stop_fits_the_rounds(doc: Mapping[str, Any], at: str) -> None:
    """What a stop left adds up: a round cut short only in a run that ended early, no more rounds than were asked
    for (a file of 2 rounds saying 1 asked read 'one run of each' over medians 'in 2/2'), and as many runs per
    round as variants (the cut round's 'N more variants measured nothing' is counted from it)."""
    rounds, cut = doc["rounds"], doc.get("cut_round", [])
    if cut and not doc.get("interrupted") and doc.get("stopped") is None:
        raise SchemaError(child(at, "cut_round"), "a round cut short in a run neither interrupted nor stopped")
    asked, variants = doc.get("rounds_asked"), doc.get("variants")
    held = len(rounds) + (1 if cut else 0)
    if asked is not None and asked < held:
        raise SchemaError(child(at, "rounds_asked"), f"{asked}, fewer than the {held} rounds the file holds")
    if variants is not None and rounds and variants != len(rounds[0]):
        raise SchemaError(child(at, "variants"), f"{variants}, but each round has {len(rounds[0])} runs")
    if variants is not None and len(cut) > variants:
        raise SchemaError(child(at, "cut_round"), f"{len(cut)} runs, more than variants ({variants})")


REPEAT_SHAPE = derive(
    RepeatResult,
    of=OneOf(tuple(REPEATED)),
    rounds=ListOf(ListOf(Anything(), fewest=1)),
    skipped=SKIPPED,
    machine=MACHINE,
    notes=NOTES,
    cut_round=ListOf(Anything()),
    rounds_asked=Integer(1),
    variants=Integer(1),
    omit=("cpus", "cut", "asked"),
    rules=(_rounds_of_their_kind, _stop_fits_the_rounds),
)
