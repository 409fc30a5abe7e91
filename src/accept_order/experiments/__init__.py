"""Experiments: one registry from a result kind to everything that knows that kind.

An experiment is a vertical slice: the code that runs it, its result type, its report (rich), its
picture (matplotlib, optional), its export tables, its Python API and its --repeat support live together in
one package under experiments/. `EXPERIMENTS` below maps each result kind (the `kind` a result file names)
to its `Entry`: where its `Experiment` is, the command that makes it, its public functions and its
repeat support. The CLI's commands (cli/app.py), the public API (api.py, accept_order.NAME), --repeat's
kinds (repeat/kinds.py), the envelope's known kinds, `show`'s report, `plot`'s picture, `show --format
csv|hdr`'s tables and `show --table`'s choices all read it. results/ and render/ know no kind: files, the
envelope, typed loading, merge and the shared widgets (documents.py joins them to the registry).

Adding an experiment:
  1. one folder experiments/NAME/: run.py (drives it), result.py (the typed result; its `to_dict()` is
     the measurements the command saves, its shape (results/schema.py, mostly `derive`d from the
     dataclasses) what a file of it must hold), report.py (rich), plot.py (matplotlib), api.py (its public
     functions), repeated.py (its --repeat support, if any) and experiment.py, which puts them together as
     `NAME = Experiment(...)` (parts.py) with its export tables;
  2. one line in EXPERIMENTS below;
  3. its thin click command, cli/NAME.py (the CLI is the floor above; it finds the command by its name).

Entries are imported only when their kind is used (`show` of a burst never imports the latency
experiment), and pictures only when drawn: matplotlib stays an optional extra.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .parts import Experiment


class Entry(NamedTuple):
    """One line of the registry: where a result kind's `Experiment` is ("module:NAME" under this package,
    imported on first use), the command that makes it (a click command of that name in cli/NAME.py), the
    public functions that run it (each defined in the experiment's own api.py, found as accept_order.NAME),
    and where its `--repeat` support is (a `Repeated`, experiments/repeat/kinds.py). `per_connection`: about how
    many bytes its saved result keeps per connection of one run, where it keeps something per connection
    (cli/room.py's estimate of a file's size before the run); `latencies`: what it keeps is a latency
    histogram, one count per distinct microsecond, so it is bounded by its distinct values, not its connections."""

    experiment: str
    command: str | None = None
    api: tuple[str, ...] = ()
    repeated: str | None = None
    per_connection: int = 0
    latencies: bool = False

    @property
    def folder(self) -> str:
        return self.experiment.split(".")[0]


# The kinds other folders name (the CLI's commands, observe's mechanism named by inspect, the sweep that lives in
# latency's folder): one spelling each, read from here.
INSPECT_KIND = "inspect"
SWEEP_KIND = "sweep"
# Bytes per connection, rounded up from this tool's own files (Linux 6.18, 3,000 connections): 165 for `run`'s
# records, 185 per mode for `herd`'s with their wakeups, 24-26 for a latency histogram whose values are all distinct.
_RECORDS, _LATENCIES = 200, 32
# kind -> its entry. A new experiment is its folder and one line here; the CLI's commands, the public API
# and --repeat's kinds are read from it (cli/app.py COMMANDS, api.py, repeat/kinds.py REPEATED), in this
# order (the order `accept-order --help` lists the commands in).
EXPERIMENTS: dict[str, Entry] = {
    "run": Entry("order.experiment:RUN", "run", ("run", "sequential"), "order.repeated:RUN_REPEATED", _RECORDS),
    "compare": Entry(
        "order.compare_experiment:COMPARE", "compare", ("compare",), "order.repeated:COMPARE_REPEATED", _RECORDS
    ),
    "serve": Entry("order.serve_experiment:SERVE", "serve", ("serve",)),
    "latency": Entry(
        "latency.experiment:LATENCY",
        "latency",
        ("latency",),
        "latency.repeated:LATENCY_REPEATED",
        _LATENCIES,
        latencies=True,
    ),
    "latency-compare": Entry(
        "latency.experiment:LATENCY_COMPARE", None, ("compare_latency",), "latency.repeated:LATENCY_COMPARE_REPEATED"
    ),
    SWEEP_KIND: Entry(
        "latency.experiment:SWEEP",
        SWEEP_KIND,
        ("sweep_accept_batch",),
        "latency.repeated:SWEEP_REPEATED",
        _LATENCIES,
        True,
    ),
    "herd": Entry("herd.experiment:HERD", "herd", ("herd",), "herd.repeated:HERD_REPEATED", _RECORDS),
    "reload": Entry("reload.experiment:RELOAD", "reload", ("reload",), "reload.repeated:RELOAD_REPEATED"),
    "burst": Entry("burst.experiment:BURST", "burst", ("burst",), "burst.repeated:BURST_REPEATED"),
    "ramp": Entry("ramp.experiment:RAMP", "ramp", ("ramp",), "ramp.repeated:RAMP_REPEATED"),
    INSPECT_KIND: Entry("inspect.experiment:INSPECT", INSPECT_KIND, ("inspect",)),  # its API: accept_order.inspect
    "atlas": Entry("atlas.experiment:ATLAS", "atlas", ("atlas",)),
    "observe": Entry("observe.experiment:OBSERVE", "observe", ("observe",)),
    "repeat": Entry("repeat.experiment:REPEAT", None, ("repeat",)),
}
KINDS = tuple(EXPERIMENTS)


def imported(where: str) -> Any:
    """The object "module:NAME" names under this package, its module imported now. Every experiment is
    reached this way: results/shapes.py is told here which servers this version knows (not at start-up,
    which needs only the registry's names)."""
    from .known_servers import know_servers

    know_servers()
    module, name = where.split(":")
    return getattr(importlib.import_module(f".{module}", __name__), name)


def find(kind: str) -> Experiment[Any] | None:
    """The experiment of a result kind (its module imported now), or None for a kind nobody registered."""
    entry = EXPERIMENTS.get(kind)
    if entry is None:
        return None
    from .parts import Experiment

    found = imported(entry.experiment)
    assert isinstance(found, Experiment) and found.kind == kind, entry
    return found


def commands() -> list[str]:
    """The commands that make results, in the registry's order."""
    return [entry.command for entry in EXPERIMENTS.values() if entry.command]


# public function name -> "module:function" (each experiment's api.py)
PUBLIC: dict[str, str] = {name: f"{e.folder}.api:{name}" for e in EXPERIMENTS.values() for name in e.api}


def public_function(name: str) -> Callable[..., Any] | None:
    """The public function `name` (accept_order.NAME, api.NAME), its experiment imported now; None if none."""
    where = PUBLIC.get(name)
    return imported(where) if where else None


def every() -> list[Experiment[Any]]:
    """Every registered experiment (imports them all: for help texts and tests, not for start-up)."""
    return [e for e in (find(kind) for kind in EXPERIMENTS) if e is not None]
