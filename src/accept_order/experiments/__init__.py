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
     `NAME = Experiment(...)` with its export tables;
  2. one line in EXPERIMENTS below;
  3. its thin click command, cli/NAME.py (the CLI is the floor above; it finds the command by its name).

Entries are imported only when their kind is used (`show` of a burst never imports the latency
experiment), and pictures only when drawn: matplotlib stays an optional extra.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..core.histogram import LatencyHistogram
    from ..results.envelope import FileKind, V1Form
    from ..results.schema import Shape

R = TypeVar("R")
Document = dict[str, Any]
# A CSV table from the runs a document holds (see Experiment.runs)
Table = Callable[[list[Document]], str]


@dataclass(frozen=True)
class Entry:
    """One line of the registry: where a result kind's `Experiment` is ("module:NAME" under this package,
    imported on first use), the command that makes it (a click command of that name in cli/NAME.py), the
    public functions that run it (each defined in the experiment's own api.py, found as accept_order.NAME),
    and where its `--repeat` support is (a `Repeated`, experiments/repeat/kinds.py)."""

    experiment: str
    command: str | None = None
    api: tuple[str, ...] = ()
    repeated: str | None = None

    @property
    def folder(self) -> str:
        return self.experiment.split(".")[0]


# kind -> its entry. A new experiment is its folder and one line here; the CLI's commands, the public API
# and --repeat's kinds are read from it (cli/app.py COMMANDS, api.py, repeat/kinds.py REPEATED), in this
# order (the order `accept-order --help` lists the commands in).
EXPERIMENTS: dict[str, Entry] = {
    "run": Entry("order.experiment:RUN", "run", ("run", "sequential"), "order.repeated:RUN_REPEATED"),
    "compare": Entry("order.experiment:COMPARE", "compare", ("compare",), "order.repeated:COMPARE_REPEATED"),
    "serve": Entry("order.experiment:SERVE", "serve", ("serve",)),
    "latency": Entry("latency.experiment:LATENCY", "latency", ("latency",), "latency.repeated:LATENCY_REPEATED"),
    "latency-compare": Entry(
        "latency.experiment:LATENCY_COMPARE", None, ("compare_latency",), "latency.repeated:LATENCY_COMPARE_REPEATED"
    ),
    "sweep": Entry("latency.experiment:SWEEP", "sweep", ("sweep_accept_batch",), "latency.repeated:SWEEP_REPEATED"),
    "herd": Entry("herd.experiment:HERD", "herd", ("herd",), "herd.repeated:HERD_REPEATED"),
    "reload": Entry("reload.experiment:RELOAD", "reload", ("reload",), "reload.repeated:RELOAD_REPEATED"),
    "burst": Entry("burst.experiment:BURST", "burst", ("burst",), "burst.repeated:BURST_REPEATED"),
    "ramp": Entry("ramp.experiment:RAMP", "ramp", ("ramp",), "ramp.repeated:RAMP_REPEATED"),
    "inspect": Entry("inspect.experiment:INSPECT", "inspect", ("inspect",)),
    "atlas": Entry("atlas.experiment:ATLAS", "atlas", ("atlas",)),
    "observe": Entry("observe.experiment:OBSERVE", "observe", ("observe",)),
    "repeat": Entry("repeat.experiment:REPEAT", None, ("repeat",)),
}
KINDS = tuple(EXPERIMENTS)


@dataclass(frozen=True)
class Experiment(Generic[R]):
    """One result kind's parts. `load` reads a version-2 document into the typed result, `shape` is what
    such a document must hold (checked whole when a file is loaded, before `load` sees it), `report` is what
    the command printed, `figure(result, PlotOptions)` its picture (import matplotlib inside; see `lazy`),
    `tables` its CSV tables by name (the first is the default), `latency_runs` its (label, histogram)
    pairs for `show --format hdr`; `several`: the document keeps its runs in a list under "runs"."""

    kind: str
    load: Callable[[Document], R]
    shape: Shape
    report: Callable[[R], RenderableType]
    figure: Callable[..., Any] | None = None
    tables: Mapping[str, Table] = field(default_factory=dict)
    latency_runs: Callable[[list[Document]], list[tuple[str, LatencyHistogram]]] | None = None
    several: bool = False
    v1: V1Form | None = None  # the form its runs had in version 1's files (None: a kind newer than 0.1)
    mergeable: bool = False  # `merge` adds its histograms and counts (results/merge.py)
    # What a saved file adds to `to_dict()`'s measurements, derived from them (a verdict, for other tools to
    # read; ignored when the file is read back): computed when the result is saved, never stored in it.
    derived: Callable[[R], Document] | None = None

    def document(self, result: R) -> Document:
        """The payload a command saves: the result's measurements, then what is derived from them."""
        payload: Document = result.to_dict()  # type: ignore[attr-defined]
        return payload | self.derived(result) if self.derived else payload

    @property
    def file_kind(self) -> FileKind:
        """What the file format needs to know of this kind (results/envelope.py)."""
        from ..results.envelope import FileKind

        _know_servers()
        return FileKind(self.shape, self.several, self.v1, self.mergeable)

    @property
    def default_table(self) -> str | None:
        return next(iter(self.tables), None)

    def runs(self, document: Document) -> list[Document]:
        """The runs a document holds: its "runs" list, or the document itself when it is one run."""
        if not self.several:
            return [document]
        runs = document["runs"]
        if not isinstance(runs, list):
            raise TypeError("'runs' is not a list")
        return list(runs)


def _know_servers() -> None:
    """Tell the floors below which server kinds this version has: a spec's label (core/spec.py LABELS, filled
    as the registry is imported) and a result file's server check (results/shapes.py). Every way to an
    experiment's parts (imported, Experiment.file_kind) comes through here; the start-up of the CLI does not."""
    from ..results.shapes import check_servers_with
    from ..servers import registry  # noqa: F401  (its import fills LABELS)

    check_servers_with(_unknown_server)


def _unknown_server(kind: str, mode: str) -> tuple[str, str] | None:
    """Whether a result's server is one this version knows (the registry answers; results/shapes.py asks)."""
    from ..servers.registry import KINDS, known_mode

    if kind not in KINDS:
        return "kind", f"names server {kind!r}, which this version does not know"
    if known_mode(kind, mode) is None:
        return "mode", f"names mode {mode!r}, which {kind} does not have in this version"
    return None


def imported(where: str) -> Any:
    """The object "module:NAME" names under this package, its module imported now. Every experiment is
    reached this way: results/shapes.py is told here which servers this version knows (not at start-up,
    which needs only the registry's names)."""
    _know_servers()
    module, name = where.split(":")
    return getattr(importlib.import_module(f".{module}", __name__), name)


def find(kind: str) -> Experiment[Any] | None:
    """The experiment of a result kind (its module imported now), or None for a kind nobody registered."""
    entry = EXPERIMENTS.get(kind)
    if entry is None:
        return None
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


def lazy(module: str, name: str) -> Callable[..., Any]:
    """`module.name`, imported on its first call: a picture's code (and matplotlib) loads only to draw."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__qualname__ = call.__name__ = name
    return call
