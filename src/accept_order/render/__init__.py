"""Renderers: result kind -> a function from the saved document to a rich renderable.

An explicit registry: each entry names its module and function, imported only when that kind is shown,
so nothing registers itself as a side effect of an import. Only the CLI prints what these return.
"""

from __future__ import annotations

import importlib
from typing import Any

from rich.console import RenderableType

from ..errors import ResultFileError

# kind -> (module under accept_order.render.documents, function taking the version-2 document)
RENDERERS: dict[str, str] = {
    "run": "run_document",
    "compare": "compare_document",
    "herd": "herd_document",
    "latency": "latency_document",
    "latency-compare": "latency_compare_document",
    "sweep": "sweep_document",
    "serve": "serve_document",
    "reload": "reload_document",
    "burst": "burst_document",
    "ramp": "ramp_document",
    "repeat": "repeat_document",
}


def render_document(kind: str, document: dict[str, Any]) -> RenderableType:
    """A saved result file (version 2 shape), rendered as the command that wrote it printed it."""
    try:
        name = RENDERERS[kind]
    except KeyError:
        raise ResultFileError(f"cannot show a result of kind {kind!r}") from None
    renderer = getattr(importlib.import_module(".documents", __name__), name)
    try:
        return renderer(document)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # A truncated or hand-edited file: one line naming what is wrong, not a traceback.
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ResultFileError(f"malformed {kind!r} result ({detail})") from None
