"""`accept-order merge`: add latency results of the same experiment (several client hosts, or sessions)."""

from __future__ import annotations

import click

from .app import handle_errors
from .common import report_and_save
from .options import examples, json_option


@click.command(
    epilog=examples(
        "accept-order merge monday.json tuesday.json --json both.json        # repeated sessions: times add",
        "accept-order merge host-a.json host-b.json --concurrent --json all.json   # one server, two clients",
    )
)
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--concurrent",
    is_flag=True,
    help="The files were measured at the same time (several client hosts): the run took the longest of their "
    "times, not their sum.",
)
@json_option()
@handle_errors
def merge(paths: tuple[str, ...], concurrent: bool, json_path: str | None) -> None:
    """Add up latency results of the same experiment, exactly. Histograms, failures and counts add."""
    from ..core.text import escape_controls
    from ..experiments import find
    from ..experiments.documents import file_kinds, load, render_document
    from ..results.envelope import check
    from ..results.merge import merge as merge_documents
    from ..results.merge_overlap import check_distinct_files

    if len(paths) < 2:
        raise click.UsageError("merge needs two result files or more")
    check_distinct_files(paths)
    documents = []
    for path in paths:
        file_kind, document = load(path)
        documents.append((escape_controls(path), file_kind, document))
    kind, merged = merge_documents(documents, file_kinds(), concurrent)
    experiment = find(kind)
    assert experiment is not None  # merge_documents accepts only the latency kinds
    if experiment.several:
        merged.pop("interrupted", None)  # each run says whether it was cut short; the merge is not
    check(experiment.shape, merged, "the merged result")  # counts that add up past what a file may hold
    result = experiment.load(merged)
    # Reported as `show` reports a file: every string from the files with its control characters escaped.
    report_and_save(lambda: render_document(kind, merged), json_path, kind, result)
