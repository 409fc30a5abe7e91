"""What `--repeat` needs from an experiment it repeats, said by that experiment in its own repeated.py: how
one run is read back and checked, how the runs of a round are named, its report over the rounds (figures
as median and range, and what the rounds agree on) and the warnings its runs earn, its rows of the `rounds`
and `workers` tables, and the one figure per run its picture draws. `rounds[i][j]` is round i's run of
variant j, of the experiment's own type. This package knows no experiment by name: REPEATED finds them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import EXPERIMENTS, imported

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ...core.measures import Environment
    from ...core.run_warnings import RunWarning
    from ...results.schema import Shape

Document = dict[str, Any]
Rounds = Sequence[Sequence[Any]]

# `of` -> "module:name" under accept_order.experiments, imported on first use: every kind whose registry
# entry has --repeat support (EXPERIMENTS), in its order, the one a file's wrong `of` is told its choices in
REPEATED: dict[str, str] = {kind: entry.repeated for kind, entry in EXPERIMENTS.items() if entry.repeated}


@dataclass(frozen=True)
class Repeated:
    """One repeatable experiment. `load`/`shape`: one run's saved dict; `names(row)`: the names of a
    round's runs (unique among the variants; `each` makes it from one run's name); `report(rounds)`: its
    table(s) and verdict lines; `warnings(rounds)`: what its runs warn of (the machine's own warnings are
    added); `rows`/`worker_rows`: the `rounds` and `workers` CSV rows of one saved run (without the round
    number) under `columns` and `worker_columns`, then `kept_columns` and `kept_worker_columns` (cells a run
    of one request per connection leaves empty: the tables have them only when some run fills one, so that
    files without kept connections export as before); `value(run)`: the figure the picture draws per run,
    named by `what`; `command`: the command that saves it, as the picture's title names it (`of` when empty);
    `report_once`, `reads_cut_runs`: see below."""

    of: str
    load: Callable[[Document], Any]
    shape: Shape
    names: Callable[[Sequence[Any]], list[str]]
    report: Callable[[Rounds], list[RenderableType]]
    columns: tuple[str, ...]
    rows: Callable[[Document], list[list[Any]]]
    worker_columns: tuple[str, ...]
    worker_rows: Callable[[Document], list[list[Any]]]
    value: Callable[[Any], float]
    what: str
    environment: Callable[[Any], Environment | None] = lambda run: run.environment
    warnings: Callable[[Rounds], list[RunWarning]] = lambda rounds: []
    command: str = ""
    kept_columns: tuple[str, ...] = ()
    kept_worker_columns: tuple[str, ...] = ()
    # figure(rounds, options): a picture of its own instead of `value` per round, where one figure per run says
    # too little (a ramp's knee, of curves a colleague reads by their shape)
    figure: Callable[[Rounds, Any], Any] | None = None
    # report_once(rounds): the report of one round asked for (ramp --modes without --repeat: one run of each, said
    # as one run, not as medians 'in 1/1'); None: `report` for any number
    report_once: Callable[[Rounds], list[RenderableType]] | None = None
    # its report reads a run a stop cut short (a ramp's steps so far: 'held to 600/s, then interrupted'): where
    # no round finished, the cut round shows that run beside the ones that finished
    reads_cut_runs: bool = False


def each(name: Callable[[Any], str]) -> Callable[[Sequence[Any]], list[str]]:
    """`names` of a round from one run's name (when a run's name does not depend on the others')."""
    return lambda row: [name(run) for run in row]


def find_repeated(of: str) -> Repeated | None:
    """The repeatable experiment `of` names (imported now), or None when none is registered under it."""
    where = REPEATED.get(of)
    if where is None:
        return None
    found = imported(where)
    assert isinstance(found, Repeated) and found.of == of, where
    return found


def by_variant(repeated: Repeated, rounds: Rounds) -> dict[str, list[Any]]:
    """Each variant's runs, in round order, under its name."""
    out: dict[str, list[Any]] = {}
    for row in rounds:
        for name, run in zip(repeated.names(row), row, strict=True):
            out.setdefault(name, []).append(run)
    return out


def first_environment(repeated: Repeated, rounds: Rounds) -> Environment | None:
    """Where the runs were measured (a run cut short may have kept none)."""
    return next((e for row in rounds for r in row if (e := repeated.environment(r)) is not None), None)


def repeated_of(of: str) -> Repeated:
    """The repeatable experiment of a checked result (its `of` is one of REPEATED: REPEAT_SHAPE says so)."""
    found = find_repeated(of)
    assert found is not None, of
    return found
