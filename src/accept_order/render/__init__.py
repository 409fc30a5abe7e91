"""Saved results as text: a result kind's experiment (experiments.EXPERIMENTS) loads the document and
reports it; its module is imported only when that kind is shown. Only the CLI prints what this returns."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType

from ..errors import ResultFileError


def render_document(kind: str, document: dict[str, Any]) -> RenderableType:
    """A saved result file (version 2 shape), rendered as the command that wrote it printed it, every
    string from the file with its control characters escaped (a title's "\x1b[2J" prints as text)."""
    from ..experiments import find
    from .text import escape_controls_everywhere

    experiment = find(kind)
    if experiment is None:
        raise ResultFileError(f"cannot show a result of kind {kind!r}")
    try:
        return experiment.report(experiment.load(escape_controls_everywhere(document)))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # A truncated or hand-edited file: one line naming what is wrong, not a traceback.
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ResultFileError(f"malformed {kind!r} result ({detail})") from None
