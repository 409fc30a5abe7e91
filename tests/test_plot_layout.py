"""What every picture looks like, asserted on the figure objects (never on pixels): drawn from each golden
result (tests/data/golden/*.json) and from variants of them that crowd a picture (failures, many modes),
nothing is cut off at the figure's edge, no legend covers a bar, a line or a point, the colours are
explained, and the footers speak as the CLI does (connections, durations in the unit they fill)."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from accept_order.experiments.documents import load, plot_document
from accept_order.render.plots import PlotOptions
from accept_order.render.text import duration_us

GOLDEN = Path(__file__).parent / "data" / "golden"
MODES = ["blocking", "reuseport", "epoll", "epoll-shared", "poll", "select", "epoll-herd", "reuseport-cpu"]
MODES += ["io-uring", "incoming-cpu", "accept-mutex", "fd-pass"]
# One pytest-xdist worker runs them all: figure() draws each picture once per process, and several tests read it.
pytestmark = pytest.mark.xdist_group("test_plot_layout")


@pytest.fixture(autouse=True)
def _matplotlib() -> Iterator[None]:
    pytest.importorskip("matplotlib")
    yield


def golden(name: str) -> dict[str, Any]:
    return json.loads((GOLDEN / f"{name}.json").read_text())


def burst_failed() -> dict[str, Any]:
    """The largest burst of the slowest mode (the top right point) and the smallest of the fastest (the bottom
    left one) lost clients: where a note beside the point is likeliest to run off."""
    document = golden("burst")
    top = document["runs"][1]["cells"][1]
    top["served"], top["errors"] = [5, 7], {"ECONNREFUSED": 38}
    low = document["runs"][0]["cells"][0]
    low["served"], low["errors"] = [2, 0], {"ECONNRESET": 18}
    return document


def burst_crowded() -> dict[str, Any]:
    """Both modes lost clients in their largest burst, in nearly the same time (508 and 464 failed), and the
    load generator set the pace of epoll's smallest burst (it took more than half of it to start them)."""
    document = golden("burst")
    for run, failed in zip(document["runs"], (508, 464), strict=True):
        top = run["cells"][1]
        top["wall_s"], top["served"], top["errors"] = 0.0125 + failed * 1e-7, [5, 7], {"timeout": failed}
        for cell in run["cells"]:
            for driver in cell["drivers"]:
                driver["open_s"] = 0.1 * cell["wall_s"]
    low = document["runs"][0]["cells"][0]
    for driver in low["drivers"]:
        driver["open_s"] = 0.9 * low["wall_s"]
    return document


def burst_wide() -> dict[str, Any]:
    """Burst sizes 25 times apart (1000 and 25000 clients)."""
    document = burst_failed()
    for run in document["runs"]:
        for cell, clients in zip(run["cells"], (1000, 25000), strict=True):
            cell["clients"] = clients
            cell["served"] = [clients - sum(cell["errors"].values()), 0]
    return document


def many_modes(name: str, count: int) -> dict[str, Any]:
    """A comparison of `count` modes (its runs repeated under other mode names): long titles and legends."""
    document = golden(name)
    runs = document["runs"]
    document["runs"] = [copy.deepcopy(runs[i % len(runs)]) for i in range(count)]
    for run, mode in zip(document["runs"], MODES, strict=False):
        run["server"]["mode"] = mode
    return document


def compare_last_takes_all() -> dict[str, Any]:
    """The last worker served every connection: its bar reaches the top right corner of its panel."""
    document = golden("compare")
    pids = {r["worker"]: r["pid"] for r in document["runs"][0]["records"]}
    for run in document["runs"]:
        for record in run["records"]:
            record["worker"], record["pid"] = 2, pids[2]
    return document


def observe_many_workers(count: int = 24) -> dict[str, Any]:
    """A server with `count` workers observed: a long legend of workers."""
    document = golden("observe")
    first = document["workers"][0]
    document["workers"] = [{**first, "index": i, "pid": first["pid"] + i} for i in range(count)]
    for interval in document["intervals"]:
        for key in ("accepts", "empty", "cpu"):
            interval[key] = [interval[key][i % len(interval[key])] for i in range(count)]
    return document


def reload_beyond() -> dict[str, Any]:
    """A shared-queue run that lost connections (beyond what the kernel promises: red) among the others."""
    document = golden("reload")
    document["runs"][0]["errors"] = {"ECONNRESET": 7}
    document["runs"][0]["served"][1] -= 7
    return document


def work_200ms() -> dict[str, Any]:
    document = golden("run")
    document["server"]["work_us"] = 200_000
    return document


VARIANTS: dict[str, Callable[[], dict[str, Any]]] = {
    "burst-failed": burst_failed,
    "burst-wide": burst_wide,
    "burst-crowded": burst_crowded,
    "compare-9": lambda: many_modes("compare", 9),
    "compare-last-takes-all": compare_last_takes_all,
    "latency-compare-12": lambda: many_modes("latency-compare", 12),
    "observe-24": observe_many_workers,
    "reload-beyond": reload_beyond,
    "run-200ms": work_200ms,
}
FIGURES = [*sorted(p.stem for p in GOLDEN.glob("*.json")), *VARIANTS]


@functools.cache
def figure(name: str, cdf: bool = False) -> Any:
    """The figure `plot` draws for that golden result (or variant), laid out as it is saved (drawn once: the
    tests only read it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    document = VARIANTS[name]() if name in VARIANTS else golden(name)
    fig = plot_document(document["kind"], load_document(document), PlotOptions(cdf=cdf))
    FigureCanvasAgg(fig)
    fig.draw_without_rendering()  # laid out (constrained layout runs at drawing time), no pixels
    return fig


def _inside(inner: Any, outer: Any, slack: float = 1.0) -> bool:
    return (
        inner.x0 >= outer.x0 - slack
        and inner.y0 >= outer.y0 - slack
        and inner.x1 <= outer.x1 + slack
        and inner.y1 <= outer.y1 + slack
    )


def _texts(fig: Any) -> list[tuple[str, Any]]:
    """Every text drawn but the tick labels (the tight box below covers those): titles, footers, axis labels,
    legends, notes and bar labels, each with its box in pixels."""
    from matplotlib.text import Text

    renderer = fig.canvas.get_renderer()
    ticks = {id(label) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for label in (*axis.get_ticklabels(), *axis.get_ticklabels(minor=True))}  # fmt: skip
    drawn = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in ticks]
    return [(t.get_text(), t.get_window_extent(renderer)) for t in drawn]


@pytest.mark.parametrize("name", FIGURES)
def test_nothing_is_cut_off_at_the_figure_edge(name: str) -> None:
    fig = figure(name)
    outside = [(s[:60], [round(v) for v in box.extents]) for s, box in _texts(fig) if not _inside(box, fig.bbox)]
    assert not outside, f"{name}: text beyond the {fig.bbox.width:.0f}x{fig.bbox.height:.0f} figure: {outside}"
    # what `savefig(bbox_inches="tight")` would have to grow the figure by to show everything: nothing
    tight = fig.get_tightbbox(fig.canvas.get_renderer())
    assert _inside(tight, fig.bbox_inches, slack=0.02), (name, tight.extents, fig.bbox_inches.extents)


def _within(points: Any, box: Any) -> Any:
    x, y = points[:, 0], points[:, 1]
    return (x > box.x0) & (x < box.x1) & (y > box.y0) & (y < box.y1)


def _covered(legend_box: Any, fig: Any) -> list[str]:
    """What data a legend's box covers, in any axes of the figure: a bar, or a point along a line (its vertices
    and points between them)."""
    import numpy as np
    from matplotlib.patches import Rectangle

    renderer = fig.canvas.get_renderer()
    hits = []
    for ax in fig.axes:
        for container in ax.containers:
            for bar in container:
                if isinstance(bar, Rectangle) and bar.get_width() and bar.get_height():
                    if bar.get_window_extent(renderer).overlaps(legend_box):
                        hits.append(f"bar {bar.get_label() or container.get_label()}")
        for line in ax.get_lines():
            if not line.get_visible():
                continue
            points = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
            points = points[np.isfinite(points).all(axis=1)]
            if len(points) > 1:  # the segments too, not only their ends
                steps = np.linspace(0, 1, 40)[:, None, None]
                points = (points[:-1] + steps * (points[1:] - points[:-1])).reshape(-1, 2)
            clip = ax.bbox if line.get_clip_on() else fig.bbox
            if (_within(points, clip) & _within(points, legend_box)).any():
                hits.append(f"line {line.get_label()}")
    return hits


@pytest.mark.parametrize("name", FIGURES)
def test_no_legend_covers_a_bar_or_a_line(name: str) -> None:
    fig = figure(name)
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert not _covered(box, fig), f"{name}: the legend covers {_covered(box, fig)}"


@pytest.mark.parametrize("name", ["latency", "latency-compare"])
def test_no_legend_covers_a_cdf(name: str) -> None:
    fig = figure(name, cdf=True)
    for legend in [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]:
        box = legend.get_window_extent(fig.canvas.get_renderer())
        assert not _covered(box, fig), _covered(box, fig)


def _legend_labels(fig: Any) -> list[str]:
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


def test_reload_explains_each_colour_it_draws() -> None:
    fig = figure("reload-beyond")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "connections failed (of those driven)"
    labels = _legend_labels(fig)
    # green (migrate 1), red (epoll lost some), grey (migrate 0 promises nothing): each named once
    assert labels == ["within what the kernel promises", "beyond what the kernel promises",
                      "the kernel promises nothing here"], labels  # fmt: skip
    colours = {bar.get_facecolor() for bar in ax.containers[0]}
    assert len(colours) == 3
    # the golden file has no red: its legend names only the two colours drawn
    assert _legend_labels(figure("reload")) == ["within what the kernel promises", "the kernel promises nothing here"]


@pytest.mark.parametrize("name", ["burst", "burst-failed", "burst-wide"])
def test_burst_draws_time_on_a_log_axis_and_its_notes_inside(name: str) -> None:
    fig = figure(name)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert "ms" in ax.get_ylabel()
    assert ax.get_xscale() == ("log" if name == "burst-wide" else "linear")
    notes = [t for t in ax.texts if " failed" in t.get_text()]
    assert len(notes) == (2 if name != "burst" else 0)
    renderer = fig.canvas.get_renderer()
    for note in notes:
        box = note.get_window_extent(renderer)
        assert _inside(box, ax.bbox), note.get_text()
        assert not _covered(box, fig), (note.get_text(), _covered(box, fig))  # nor written over a line
    if notes:
        # * the client set the pace; at 20 clients reuseport has a * too, so each note there names its mode
        assert sorted(t.get_text() for t in notes) == ["38 failed *", "epoll: 18 failed *"]
        assert "some failed" in _legend_labels(fig)


def test_burst_notes_at_one_size_are_stacked_each_naming_its_mode() -> None:
    """Two modes failing at one burst size with nearly the same time: two notes, neither drawn over the other,
    each saying whose it is; a burst the load generator paced is marked * and the footer says what * means."""
    fig = figure("burst-crowded")
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    notes = {t.get_text(): t.get_window_extent(renderer) for t in ax.texts}
    assert sorted(notes) == ["*", "epoll: 508 failed", "reuseport: 464 failed"]
    first, second = notes["epoll: 508 failed"], notes["reuseport: 464 failed"]
    assert not first.overlaps(second), (first.extents, second.extents)
    assert all(_inside(box, ax.bbox) for box in notes.values())
    assert "* the load generator took more than half of the burst" in fig.get_supxlabel()
    unpaced = burst_crowded()
    for driver in unpaced["runs"][0]["cells"][0]["drivers"]:
        driver["open_s"] = 0.0
    fig = plot_document("burst", load_document(unpaced))
    assert "*" not in fig.get_supxlabel()  # no mark, no caveat
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["epoll: 508 failed", "reuseport: 464 failed"]


def test_burst_keeps_a_line_drawn_over_another_visible() -> None:
    """Two modes with the same times: the one drawn first is wider, so it shows around the other."""
    document = golden("burst")
    document["runs"][1]["cells"] = copy.deepcopy(document["runs"][0]["cells"])
    fig = plot_document("burst", load_document(document))
    first, second = fig.axes[0].get_lines()[:2]
    assert list(first.get_ydata()) == list(second.get_ydata())
    assert first.get_linewidth() > second.get_linewidth()
    assert first.get_markersize() > second.get_markersize()


def load_document(document: dict[str, Any]) -> dict[str, Any]:
    """A document as `load` returns it (checked), from memory (through a file of its own, removed after: a
    mkdtemp here left ~28 folders in /tmp a suite run)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "result.json"
        path.write_text(json.dumps(document))
        return load(path)[1]


def test_compare_shares_its_even_share_key_once_above_the_bars() -> None:
    fig = figure("compare")
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1
    renderer = fig.canvas.get_renderer()
    box = legends[0].get_window_extent(renderer)
    top_panel = legends[0].axes.get_window_extent(renderer)
    assert box.y0 >= top_panel.y1 - 1  # above the panel, not inside it


def test_footers_say_connections_and_durations_in_their_unit() -> None:
    footers = {name: figure(name).get_supxlabel() for name in FIGURES}
    assert not [n for n, f in footers.items() if "request" in f], footers
    assert "200 connections" in footers["latency"]
    assert "work 200 ms" in footers["run-200ms"]
    assert not [n for n, f in footers.items() if "µs" in f], footers  # golden works are 0 or 1000 µs
    assert "work 1 ms" in footers["reload"]
    assert "no work" in footers["burst"]
    latency = figure("latency").axes[0]
    assert latency.get_ylabel() == "connections"


def test_repeated_runs_name_the_command_as_typed_and_keep_equal_figures_visible() -> None:
    fig = figure("repeat-latency")
    assert "(accept-order latency --modes --repeat)" in fig.get_suptitle()
    lines = figure("repeat-reload").axes[0].get_lines()
    # two variants that lost nothing in both runs: the first wider, with another marker, drawn whole at 0
    assert len({line.get_marker() for line in lines}) == len(lines)
    widths = [line.get_linewidth() for line in lines]
    assert widths == sorted(widths, reverse=True) and widths[0] > widths[-1]
    assert not any(line.get_clip_on() for line in lines)
    assert figure("repeat-burst").axes[0].get_ylabel() == "ms until the largest burst's last reply or failure"


def test_herd_and_atlas_name_their_colours() -> None:
    assert _legend_labels(figure("herd"))[:2] == ["a herd (at least 1.5 woken)", "no herd"]
    atlas = _legend_labels(figure("atlas"))
    assert atlas[:2] == ["haproxy", "nginx"], atlas


def test_order_strip_numbers_connections_whole() -> None:
    ax = figure("serve").axes[0]
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


@pytest.mark.parametrize(
    ("us", "shown"),
    [(0, "0 ms"), (250, "250 µs"), (1000, "1 ms"), (1500, "1.5 ms"), (200_000, "200 ms"), (123_456, "123.456 ms"),
     (2_000_000, "2 s"), (1_234_567, "1.234567 s")],
)  # fmt: skip
def test_duration_in_the_unit_it_fills(us: int, shown: str) -> None:
    assert duration_us(us) == shown


def test_observe_gives_every_worker_its_own_colour() -> None:
    """24 workers: the palette of 10 would give workers 0, 10 and 20 one colour."""
    ax = figure("observe-24").axes[0]
    workers = [line for line in ax.get_lines() if line.get_label()[:1].isdigit()]
    assert len(workers) == 24
    assert len({tuple(to_rgba(line.get_color())) for line in workers}) == 24


def to_rgba(colour: Any) -> Any:
    from matplotlib.colors import to_rgba as rgba

    return rgba(colour)
