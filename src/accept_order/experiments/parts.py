"""The parts of one experiment, put together in its experiment.py as one `Experiment` (and listed in the
registry, experiments/__init__.py): how its saved document is read, checked, shown, drawn and exported, and
what a saved file derives from its measurements."""

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
class Experiment(Generic[R]):
    """One result kind's parts. `load` reads a version-2 document into the typed result, `shape` is what
    such a document must hold (checked whole when a file is loaded, before `load` sees it), `report` is what
    the command printed, `figure(result, PlotOptions)` its picture (import matplotlib inside; see `lazy`; every
    picture honours --title, `draws_cdf` those that honour --cdf),
    `tables` its CSV tables by name (the first is the default), `latency_runs` its (label, histogram)
    pairs for `show --format hdr`; `several`: the document keeps its runs in a list under "runs". `shape_of`
    makes the shape (`shape`) when a file is read or checked: saving a result needs none of it, and a result
    file's schema is a dozen dataclasses (issue 30: inspect and run --json import no schema)."""

    kind: str
    load: Callable[[Document], R]
    shape_of: Callable[[], Shape]
    report: Callable[[R], RenderableType]
    figure: Callable[..., Any] | None = None
    # Its picture draws histograms, which `plot --cdf` draws as CDFs instead: any other kind refuses --cdf, since
    # an option a picture cannot honour must not pass unremarked (a compare file's picture ignored it)
    draws_cdf: bool = False
    tables: Mapping[str, Table] = field(default_factory=dict)
    latency_runs: Callable[[list[Document]], list[tuple[str, LatencyHistogram]]] | None = None
    several: bool = False
    v1: V1Form | None = None  # the form its runs had in version 1's files (None: a kind newer than 0.1)
    mergeable: bool = False  # `merge` adds its histograms and counts (results/merge.py)
    # What a saved file adds to `to_dict()`'s measurements, derived from them (a verdict, for other tools to
    # read; ignored when the file is read back): computed when the result is saved, never stored in it.
    derived: Callable[[R], Document] | None = None

    @property
    def shape(self) -> Shape:
        """What a document of this kind must hold (checked whole when a file is loaded, before `load` sees it)."""
        return self.shape_of()

    def document(self, result: R) -> Document:
        """The payload a command saves: the result's measurements, then what is derived from them."""
        payload: Document = result.to_dict()  # type: ignore[attr-defined]
        return payload | self.derived(result) if self.derived else payload

    @property
    def file_kind(self) -> FileKind:
        """What the file format needs to know of this kind (results/envelope.py)."""
        from ..results.envelope import FileKind
        from .known_servers import know_servers

        know_servers()
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


def attribute(module: str, name: str) -> Callable[[], Any]:
    """`module.name`, looked up when called (a shape made on first use: PEP 562, as RUN_SHAPE is)."""

    def look_up() -> Any:
        return getattr(importlib.import_module(module), name)

    look_up.__qualname__ = look_up.__name__ = name
    return look_up


def lazy(module: str, name: str) -> Callable[..., Any]:
    """`module.name`, imported on its first call: a picture's code (and matplotlib) loads only to draw."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__qualname__ = call.__name__ = name
    return call
