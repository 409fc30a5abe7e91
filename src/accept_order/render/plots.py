"""Pictures of saved results: a result kind's experiment (experiments.EXPERIMENTS) loads the document and
draws it as a matplotlib Figure; its picture's module is imported only when drawn. matplotlib is an
optional extra (`accept-order[plot]`); without it, drawing is one line naming the package to install.
Figures are built on `Figure` objects (never pyplot's global figure manager) and saved with the Agg
renderer, so nothing opens a window.
"""

from __future__ import annotations

import io
import textwrap
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import AcceptOrderError, ResultFileError
from ..core.hints import pip_install
from ..core.text import escape_controls
from .text import duration_us

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NEEDS_MATPLOTLIB = f"plotting needs matplotlib: {pip_install('plot')}"
# -o's suffix (lower-cased) -> the format matplotlib writes
FORMATS: dict[str, str] = {".png": "png", ".svg": "svg"}
DPI = 100
WIDTH, HEIGHT = 9.0, 5.0  # inches: 900 x 500 pixels at DPI
TITLE_CHARS, FOOTER_CHARS = 110, 160  # what fits on one line of the title, of the settings' footer


class PlotUnavailable(AcceptOrderError):
    """matplotlib is not installed (or does not import): exit 1, one line."""


@dataclass(frozen=True)
class PlotOptions:
    cdf: bool = False  # latency kinds: a CDF on a log axis instead of the log2-bucket histogram
    title: str | None = None  # replaces the figure's own title


def image_format(path: str) -> str | None:
    """ "png" or "svg" from the output file's suffix; None for any other suffix."""
    return FORMATS.get(Path(path).suffix.lower())


def require_matplotlib() -> None:
    """PlotUnavailable unless matplotlib imports; selects the non-interactive Agg backend."""
    try:
        import matplotlib
    except ImportError:  # also a broken install (e.g. its numpy missing): the same remedy
        raise PlotUnavailable(NEEDS_MATPLOTLIB) from None
    matplotlib.use("Agg")


def text(value: object) -> str:
    """A string from a result file, safe to draw: control characters escaped, and `$`
    escaped so matplotlib never parses it as mathtext (an unbalanced `$` would fail at drawing time)."""
    shown = escape_controls(value).replace("$", r"\$")
    # matplotlib's legend skips labels starting with "_"
    return " " + shown if shown.startswith("_") else shown


def new_figure(height: float = HEIGHT, width: float = WIDTH) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def color(index: int) -> str:
    return f"C{index % 10}"


def worker_colors(workers: int) -> list[Any]:
    """One colour per worker index: matplotlib's qualitative palettes, a gradient beyond 20 workers."""
    from matplotlib import colormaps

    if workers <= 10:
        return [f"C{w}" for w in range(workers)]
    if workers <= 20:
        return list(colormaps["tab20"].colors[:workers])  # type: ignore[attr-defined]
    cmap = colormaps["viridis"]
    return [cmap(w / (workers - 1)) for w in range(workers)]


def titled(
    fig: Figure, title: str, options: PlotOptions, settings: str | None = None, caveats: Sequence[str] = ()
) -> None:
    """The figure's title (--title replaces it; both drawn with control characters escaped) and a footer line with
    the settings the result was measured with, then a line for each caveat (what a mark on the picture means)."""
    shown = text(options.title) if options.title is not None else text(title)
    # wrapped to the figure's width (about 7 px a character at 12 pt, 5 at 8 pt), never cut at its edge
    fig.suptitle(textwrap.fill(shown, TITLE_CHARS, break_on_hyphens=False), fontsize=12)
    footer = [textwrap.fill(text(line), FOOTER_CHARS, break_on_hyphens=False) for line in [settings, *caveats] if line]
    if footer:
        fig.supxlabel("\n".join(footer), fontsize=8, color="0.35")


def legend_outside(ax: Any, handles: Any = None, right: bool = False, ncol: int | None = None) -> Any:
    """A legend outside the axes (above them, right-aligned; or beside them on the right), so that it never
    covers a bar, a line or a point; constrained layout makes room for it."""
    where = (
        {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "ncol": ncol or 1}
        if right
        else {"loc": "lower right", "bbox_to_anchor": (1.0, 1.0), "ncol": ncol or 3}
    )
    extra = {} if handles is None else {"handles": handles}
    return ax.legend(**extra, **where, fontsize=8, frameon=False, borderaxespad=0.2)


def nothing(ax: Any, message: str) -> None:
    """An empty panel saying why (nothing ran, nothing served)."""
    ax.text(0.5, 0.5, text(message), ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def work_text(work_us: int, work_iters: int = 0) -> str:
    """The footer's work per connection, in the unit it fills (`work 200 ms`, as the CLI's durations read)."""
    parts = [duration_us(work_us)] if work_us else []
    parts += [f"{work_iters} iterations"] if work_iters else []
    return f"work {' + '.join(parts)}" if parts else "no work"


def environment_text(env: Any) -> str:
    return f"{env.system} {env.kernel}, {env.cpu_count} CPUs" if env is not None else ""


def figure_bytes(figure: Figure, fmt: str) -> bytes:
    """The figure as PNG or SVG. No date in an SVG, so the same result draws the same file."""
    buf = io.BytesIO()
    metadata = {"Date": None} if fmt == "svg" else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. a glyph the font lacks: not worth a line on stderr
            figure.savefig(buf, format=fmt, dpi=DPI, metadata=metadata)
    except (ValueError, OverflowError, RuntimeError) as exc:  # values too large or odd to lay out
        raise ResultFileError(f"cannot draw this result ({type(exc).__name__}: {escape_controls(exc)})") from None
    return buf.getvalue()
