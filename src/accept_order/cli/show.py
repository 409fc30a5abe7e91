"""`accept-order show`: print a saved result again, as the command that wrote it printed it."""

from __future__ import annotations

from typing import Any

import click

from .app import handle_errors
from .options import examples


def _tables() -> dict[str, list[str]]:
    """Each table some experiment has -> the kinds whose default it is (imports every experiment: only for
    --help and a given --table)."""
    from ..experiments import every
    from ..results.export import TABLES

    tables: dict[str, list[str]] = {name: [] for name in TABLES}
    for experiment in every():
        for name in experiment.tables:
            tables.setdefault(name, [])
        if experiment.default_table:
            tables[experiment.default_table].append(experiment.kind)
    return tables


def _kinds(kinds: list[str]) -> str:
    return kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} and {kinds[-1]}"


class _TableName(click.Choice[str]):
    """click.Choice over the tables the experiments have, found only when a --table is given or shown."""

    def __init__(self) -> None:
        self.case_sensitive = True

    def __getattr__(self, name: str) -> Any:
        if name == "choices":  # read on first use, then kept
            self.choices = tuple(_tables())
            return self.choices
        raise AttributeError(name)


class _TableOption(click.Option):
    """--table's help, from the registry of experiments when --help asks for it."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        defaults = "; ".join(f"{name} for {_kinds(kinds)}" for name, kinds in _tables().items() if kinds)
        self.help = f"With --format csv: which table, one of {', '.join(_tables())} [default: {defaults}]."
        return super().get_help_record(ctx)


@click.command(
    epilog=examples(
        "accept-order run --json run.json && accept-order show run.json",
        "accept-order show results/latency-compare.json | less -S",
        "accept-order show compare.json --format csv > records.csv",
        "accept-order show latency.json --format hdr > latency.hgrm   # HdrHistogram's percentile form",
    )
)
@click.argument("path", type=str)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "csv", "hdr"]),
    default="text",
    show_default=True,
    help="text: as the command printed it; json: the document (a version 1 file upgraded) with what is derived "
    "from it (verdicts, the model's fixed path); csv: one table; "
    "hdr: latency percentiles in HdrHistogram's text form.",
)
@click.option("--table", cls=_TableOption, type=_TableName(), default=None, metavar="TABLE")
@handle_errors
def show(path: str, fmt: str, table: str | None) -> None:
    """Print a saved result again, or export it as data. Any version this accept-order reads."""
    from rich.errors import NotRenderableError

    from ..core.errors import ResultFileError
    from ..experiments.documents import load, render_document
    from ..render.fit import fitted
    from .output import stdout, write_text

    if table is not None and fmt != "csv":
        raise click.UsageError("--table goes with --format csv")
    kind, document = load(path)
    if fmt != "text":
        write_text(_export(kind, document, fmt, table))
        return
    out = stdout()
    # Rich renders lazily, so a hand-edited field can still fail while printing: render it all first,
    # and print nothing but one line if it does not render.
    try:
        with out.capture() as captured:
            # crop=False: verbatim lines (mmhistogram output) may be wider than 80 columns when piped.
            out.print(fitted(render_document(kind, document)), crop=False)
    except (NotRenderableError, KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        raise ResultFileError(f"malformed {kind!r} result ({type(exc).__name__})") from None
    write_text(captured.get())


def _export(kind: str, document: dict[str, Any], fmt: str, table: str | None) -> str:
    """The document as data. JSON keeps every character (its encoder escapes controls); CSV and the
    histogram labels have their control characters escaped, since they are plain text on a terminal."""
    from ..core.errors import ResultFileError
    from ..core.text import escape_controls, escape_controls_everywhere
    from ..experiments import documents
    from ..results import export

    try:
        if fmt == "json":
            return export.as_json_text(documents.data_document(kind, document))
        if fmt == "csv":
            return documents.table(kind, escape_controls_everywhere(document), table)
        parts = []
        for label, hist in documents.latency_runs(kind, document):
            parts.append(f"# {escape_controls(label)}\n{export.hdr_percentiles(hist)}")
        return "\n".join(parts)
    except export.ExportError as exc:
        raise click.UsageError(str(exc)) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ResultFileError(f"malformed {kind!r} result ({type(exc).__name__})") from None
