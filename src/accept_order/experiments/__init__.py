"""Experiments: one registry from a result kind to everything that knows that kind.

An experiment is a vertical slice: the code that runs it, its result type, its report (rich), its
picture (matplotlib, optional) and its export tables live together in one package (or one module when
small) under experiments/. `EXPERIMENTS` below maps each result kind (the `kind` a result file names)
to the `Experiment` that describes it; the envelope's known kinds, `show`'s report, `plot`'s picture,
`show --format csv|hdr`'s tables and `show --table`'s choices all read it. results/ and render/ know
no kind: files, the envelope, typed loading, merge and the shared widgets.

Adding an experiment:
  1. one folder experiments/NAME/: run.py (drives it), result.py (the typed result; its `to_dict()` is
     the payload the command saves, its shape (results/schema.py, mostly `derive`d from the dataclasses)
     what a file of it must hold), report.py (rich), plot.py (matplotlib), and experiment.py, which
     puts them together as `NAME = Experiment(...)` with its export tables;
  2. one line in EXPERIMENTS below ("kind": "NAME.experiment:NAME");
  3. one thin click command in cli/NAME.py, listed in cli/app.py's COMMANDS.

Entries are imported only when their kind is used (`show` of a burst never imports the latency
experiment), and pictures only when drawn: matplotlib stays an optional extra.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..results.shapes import check_servers_with

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..core.histogram import LatencyHistogram
    from ..results.schema import Shape

R = TypeVar("R")
Document = dict[str, Any]
# A CSV table from the runs a document holds (see Experiment.runs)
Table = Callable[[list[Document]], str]

# kind -> "module:name" under accept_order.experiments, imported on first use
EXPERIMENTS: dict[str, str] = {
    "run": "order.experiment:RUN",
    "compare": "order.experiment:COMPARE",
    "herd": "herd.experiment:HERD",
    "latency": "latency.experiment:LATENCY",
    "latency-compare": "latency.experiment:LATENCY_COMPARE",
    "sweep": "latency.experiment:SWEEP",
    "serve": "order.experiment:SERVE",
    "reload": "reload.experiment:RELOAD",
    "burst": "burst.experiment:BURST",
    "ramp": "ramp.experiment:RAMP",
    "repeat": "repeat.experiment:REPEAT",
    "atlas": "atlas.experiment:ATLAS",
    "inspect": "inspect.experiment:INSPECT",
    "observe": "observe.experiment:OBSERVE",
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
    # What a saved file adds to `to_dict()`'s measurements, derived from them (a verdict, for other tools to
    # read; ignored when the file is read back): computed when the result is saved, never stored in it.
    derived: Callable[[R], Document] | None = None

    def document(self, result: R) -> Document:
        """The payload a command saves: the result's measurements, then what is derived from them."""
        payload: Document = result.to_dict()  # type: ignore[attr-defined]
        return payload | self.derived(result) if self.derived else payload

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


def _unknown_server(kind: str, mode: str) -> tuple[str, str] | None:
    """Whether a result's server is one this version knows (the registry answers; results/shapes.py asks)."""
    from ..servers.registry import KINDS, known_mode

    if kind not in KINDS:
        return "kind", f"names server {kind!r}, which this version does not know"
    if known_mode(kind, mode) is None:
        return "mode", f"names mode {mode!r}, which {kind} does not have in this version"
    return None


check_servers_with(_unknown_server)


def find(kind: str) -> Experiment[Any] | None:
    """The experiment of a result kind (its module imported now), or None for a kind nobody registered."""
    where = EXPERIMENTS.get(kind)
    if where is None:
        return None
    module, name = where.split(":")
    found = getattr(importlib.import_module(f".{module}", __name__), name)
    assert isinstance(found, Experiment) and found.kind == kind, where
    return found


def every() -> list[Experiment[Any]]:
    """Every registered experiment (imports them all: for help texts and tests, not for start-up)."""
    return [e for e in (find(kind) for kind in EXPERIMENTS) if e is not None]


def lazy(module: str, name: str) -> Callable[..., Any]:
    """`module.name`, imported on its first call: a picture's code (and matplotlib) loads only to draw."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__qualname__ = call.__name__ = name
    return call
