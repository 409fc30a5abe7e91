"""`accept-order show`: print a saved result again, as the command that wrote it printed it."""

from __future__ import annotations

import sys
from typing import Any

import click

from .app import handle_errors
from .options import examples


@click.command(
    epilog=examples(
        "accept-order run --json run.json && accept-order show run.json",
        "accept-order show results/latency-compare.json | less -S",
    )
)
@click.argument("path", type=str)
@handle_errors
def show(path: str) -> None:
    """Print a saved result again (any version this accept-order reads)."""
    from rich.errors import NotRenderableError

    from ..errors import ResultFileError
    from ..render import render_document
    from ..results.envelope import load
    from .output import stdout

    kind, document = load(path)
    document = _inert_strings(document)  # a file's "\x1b[31m" must print as text, never reach the terminal
    out = stdout()
    # Rich renders lazily, so a hand-edited field can still fail while printing: render it all first,
    # and print nothing but one line if it does not render.
    try:
        with out.capture() as captured:
            # crop=False: verbatim lines (mmhistogram output) may be wider than 80 columns when piped.
            out.print(render_document(kind, document), crop=False)
    except (NotRenderableError, KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        raise ResultFileError(f"malformed {kind!r} result ({type(exc).__name__})") from None
    sys.stdout.write(captured.get())


def _inert_strings(value: Any) -> Any:
    """Every string in a loaded document (keys too) with its control characters made visible (inert)."""
    from ..results.files import inert

    if isinstance(value, str):
        return inert(value)
    if isinstance(value, dict):
        return {_inert_strings(k): _inert_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_inert_strings(v) for v in value]
    return value
