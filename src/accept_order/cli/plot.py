"""`accept-order plot`: draw a saved result as a PNG or SVG picture (needs the `plot` extra: matplotlib)."""

from __future__ import annotations

import click

from .app import handle_errors
from .options import examples


def _output(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """The picture's path: .png or .svg, and a path a file may be written to (as --json checks it)."""
    from ..core.errors import PlanError
    from ..core.text import escape_controls
    from ..render.plots import FORMATS, image_format
    from ..results.files import check_output_path

    if value == "-":  # click.File's stdout, which a picture is not written to: said so, not "must end in"
        raise click.UsageError(
            f"--output -: a picture is written to a file, not to stdout: give one ending in {' or '.join(FORMATS)}", ctx
        )
    if image_format(value) is None:
        raise click.UsageError(f"--output must end in {' or '.join(FORMATS)}, got {escape_controls(value)!r}", ctx)
    try:
        check_output_path(value, option="--output")
    except PlanError as exc:
        raise click.UsageError(str(exc), ctx) from None
    return value


@click.command(
    epilog=examples(
        "accept-order latency --modes epoll,reuseport --json lat.json && accept-order plot lat.json -o lat.png",
        "accept-order plot lat.json --cdf -o lat-cdf.svg        # a CDF on a log axis instead of buckets",
        "accept-order plot compare.json -o order.png --title 'Who serves, per mode'",
    )
)
@click.argument("path", type=str)
@click.option("-o", "--output", required=True, metavar="FILE.png|FILE.svg", callback=_output, help="Where to draw it.")
@click.option(
    "--cdf",
    is_flag=True,
    help="latency and latency-compare results: a CDF on a log axis instead of the log2-bucket histogram.",
)
@click.option("--title", default=None, help="The picture's title [default: from the result].")
@handle_errors
def plot(path: str, output: str, cdf: bool, title: str | None) -> None:
    """Draw a saved result (--json) as a picture. Latency histograms or CDFs, serving order, herds, bursts,
    ramps and reloads. Needs matplotlib: pip install 'accept-order[plot]' (from a clone: pip install '.[plot]')."""
    from ..core.text import escape_controls
    from ..experiments.documents import load, plot_document, refused_plot_option
    from ..render.plots import PlotOptions, figure_bytes, image_format, require_matplotlib
    from ..results.files import write_bytes
    from .output import note

    require_matplotlib()  # before reading: a missing extra is the first thing to say
    kind, document = load(path)
    options = PlotOptions(cdf=cdf, title=title)
    refusal = refused_plot_option(kind, options)
    if refusal is not None:
        raise click.UsageError(refusal)
    figure = plot_document(kind, document, options)
    write_bytes(output, figure_bytes(figure, image_format(output) or "png"))  # atomically, as a result file
    note(f"wrote {escape_controls(output)}")
