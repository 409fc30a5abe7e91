"""Saved results by kind: a file is read, checked against its kind's shape, shown, drawn and exported by the
experiment that kind names (EXPERIMENTS). results/ holds the file format and knows no kind; render/ holds the
widgets and the picture frame and knows no kind; this is where the two meet the registry."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..core.errors import ResultFileError
from ..core.text import escape_controls, escape_controls_everywhere
from ..results import envelope
from . import EXPERIMENTS, find

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.console import RenderableType

    from ..core.histogram import LatencyHistogram
    from ..render.plots import PlotOptions
    from ..results.envelope import FileKind


def file_kind(kind: str) -> FileKind | None:
    """What the file format needs to know of `kind`, or None for a kind this version does not know."""
    experiment = find(kind) if kind in EXPERIMENTS else None
    return experiment.file_kind if experiment else None


def file_kinds() -> dict[str, FileKind]:
    """Every kind's (imports every experiment: for merge, which must name the kinds it adds)."""
    return {kind: known for kind in EXPERIMENTS if (known := file_kind(kind)) is not None}


def load(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """A result file of any supported version: (kind, document in version 2's shape), checked whole against
    its kind's shape; ResultFileError (one line) otherwise."""
    return envelope.load(path, file_kind)


def save(path: str | os.PathLike[str], kind: str, result: Any) -> None:
    """Save a result of `kind`: its measurements and what its experiment derives from them."""
    experiment = find(kind)
    assert experiment is not None, kind  # a command saves only its own kind
    envelope.save(path, kind, experiment.document(result))


def saved_text(kind: str, result: Any, shown: str) -> str:
    """The text `save` writes to a file, for somewhere else (`--json -`: stdout, which `shown` names)."""
    experiment = find(kind)
    assert experiment is not None, kind
    return envelope.saved_text(kind, experiment.document(result), shown)


def data_document(kind: str, document: dict[str, Any]) -> dict[str, Any]:
    """The document as `show --format json` gives it: its measurements as saved, with what this version derives
    from them put in afresh (the verdicts, the model's fixed path), so that the JSON carries the figures `show`
    prints and a file saved before a figure was derived has it too."""
    experiment = find(kind)
    if experiment is None or experiment.derived is None:
        return document
    return document | experiment.derived(experiment.load(document))


def render_document(kind: str, document: dict[str, Any]) -> RenderableType:
    """A saved result file (version 2 shape), rendered as the command that wrote it printed it, every
    string from the file with its control characters escaped (a title's "\x1b[2J" prints as text)."""
    experiment = find(kind)
    if experiment is None:
        raise ResultFileError(f"cannot show a result of kind {escape_controls(repr(kind))}")
    try:
        return experiment.report(experiment.load(escape_controls_everywhere(document)))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # A truncated or hand-edited file: one line naming what is wrong, not a traceback.
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ResultFileError(f"malformed {kind!r} result ({detail})") from None


def plot_document(kind: str, document: dict[str, Any], options: PlotOptions | None = None) -> Figure:
    """A saved result file (version 2 shape) as a figure; ResultFileError (one line) for a kind without
    a picture or a malformed document."""
    from ..render.plots import PlotOptions, require_matplotlib

    experiment = find(kind)
    if experiment is None or experiment.figure is None:
        raise ResultFileError(f"cannot plot a result of kind {escape_controls(kind)!r}")
    require_matplotlib()
    try:
        figure: Figure = experiment.figure(experiment.load(document), options or PlotOptions())
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        # A truncated or hand-edited file: one line naming what is wrong, not a traceback.
        detail = f"missing {escape_controls(exc)}" if isinstance(exc, KeyError) else escape_controls(exc)
        raise ResultFileError(f"malformed {kind!r} result ({detail})") from None
    return figure


def refused_plot_option(kind: str, options: PlotOptions) -> str | None:
    """Why the picture of a `kind` result cannot honour `options` (None: it can): --cdf draws histograms as
    CDFs, which only some pictures hold. --title every picture honours (render/plots.py's `titled`)."""
    experiment = find(kind)
    if not options.cdf or experiment is None or experiment.draws_cdf:
        return None  # a kind without a picture: plot_document says so
    honoured = " and ".join(k for k in EXPERIMENTS if (e := find(k)) is not None and e.draws_cdf)
    article = "an" if kind[:1] in "aeiou" else "a"
    return f"--cdf draws the histograms of {honoured} results as CDFs: {article} {kind} result's picture has none"


def table(kind: str, document: dict[str, Any], name: str | None = None) -> str:
    """One table of a saved result (version 2 document) as CSV: its experiment says which tables it has,
    the first one by default; ExportError for a table it lacks."""
    from ..results import export  # csv and the tables' helpers: `show --format csv` alone

    experiment = find(kind)
    build = export.table(kind, experiment.tables if experiment else {}, name)
    assert experiment is not None  # a kind without an experiment has no tables: export.table refused it
    return build(experiment.runs(document))


def latency_runs(kind: str, document: dict[str, Any]) -> list[tuple[str, LatencyHistogram]]:
    """(label, histogram) of each run of a kind that keeps histograms; ExportError for any other kind."""
    from ..results import export

    experiment = find(kind)
    if experiment is None or experiment.latency_runs is None:
        article = "an" if kind[:1] in "aeiou" else "a"  # an observe result, an inspect result
        raise export.ExportError(f"{article} {kind} result has no latency histogram for --format hdr")
    return experiment.latency_runs(experiment.runs(document))
