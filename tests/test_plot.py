"""`accept-order plot`: every result kind, saved by the tool itself (and the version 1 fixtures), drawn as
a PNG or SVG; the one-line errors for a missing matplotlib, a bad suffix, a missing or malformed file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.errors import ResultFileError
from accept_order.experiments.documents import load, plot_document
from accept_order.render.plots import NEEDS_MATPLOTLIB, PlotOptions
from accept_order.results.envelope import envelope

V1 = Path(__file__).parent / "data" / "v1"
TINY = ["-w", "2"]
# name -> the command line (after `accept-order`) that saves it, with tiny settings
SAVED: dict[str, list[str]] = {
    "run": ["run", "-n", "6"],
    "compare": ["compare", "--modes", "blocking,epoll", "-n", "6"],
    "herd": ["herd", "--modes", "epoll,epoll-herd", "-n", "6", *TINY],
    "latency": ["latency", "-n", "300", "-c", "4", *TINY],
    "latency-compare": ["latency", "--modes", "blocking,epoll", "-n", "300", "-c", "4", *TINY],
    "sweep": ["sweep", "--accept-batch", "1,0", "-n", "300", "-c", "4", *TINY],
    "burst": ["burst", "--clients", "20,50", *TINY],
    "ramp": ["ramp", "--rates", "50,100", "--step", "300ms", *TINY],
}


def _accept_order(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "accept_order", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _serve_document(run: dict[str, Any]) -> dict[str, Any]:
    """A `serve` result (serve runs until it is stopped by hand): the run's workers and order, as serve saves them."""
    sequence = [r["worker"] for r in run["records"] if r["error"] is None]
    payload = {k: run[k] for k in ("server", "environment", "port", "counters")}
    return envelope("serve", {**payload, "sequence": sequence, "evidence": {}})


def _reload_document(run: dict[str, Any]) -> dict[str, Any]:
    """A `reload` result (reload needs root and a network namespace): three rows, as results/reload.py saves them."""

    def row(mode: str, how: str, migrate: int, queue: str, served: list[int], errors: dict[str, int]) -> dict[str, Any]:
        return {
            "server": {**run["server"], "mode": mode, "workers": 2},
            "load": {"connections": None, "duration_s": 2.0, "concurrency": 8, "driver_procs": 2, "timeout_s": 5.0},
            "how": how,
            "migrate": migrate,
            "queue": queue,
            "passes": False,
            "worker": 0,
            "at_s": 1.0,
            "gone_s": 0.01,
            "held": 0,
            "held_exact": False,
            "served": served,
            "finished": sum(served) + sum(errors.values()),
            "errors": errors,
            "counters": {"TcpExtListenDrops": 3} if errors else {},
            "worker_counters": [],
            "environment": run["environment"],
            "wall_s": 2.0,
            "evidence": {},
            "interrupted": False,
        }

    rows = [
        row("epoll", "leave", 0, "shared", [900, 880], {}),
        row("reuseport", "leave", 0, "per-worker", [500, 1200], {"ECONNRESET": 17}),
        row("reuseport", "leave", 1, "per-worker", [700, 1000], {}),
    ]
    return envelope("reload", {"runs": rows, "skipped": {}, "host_migrate_req": "0"})


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Result files the tool saved with --json, one per kind (serve and reload built from a run)."""
    folder = tmp_path_factory.mktemp("results")
    files: dict[str, Path] = {}
    for name, args in SAVED.items():
        path = folder / f"{name}.json"
        done = run_cli([*args, "--json", str(path)])
        assert done.exit_code == 0, f"accept-order {' '.join(args)}: {done.output}"
        files[name] = path
    run = json.loads(files["run"].read_text())
    for name, document in (("serve", _serve_document(run)), ("reload", _reload_document(run))):
        files[name] = folder / f"{name}.json"
        files[name].write_text(json.dumps(document))
    return files


@pytest.fixture
def matplotlib() -> Iterator[Any]:
    yield pytest.importorskip("matplotlib")


def assert_png(path: Path, matplotlib: Any) -> None:
    from matplotlib import image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = image.imread(path)
    height, width = pixels.shape[:2]
    assert width >= 400 and height >= 300, (width, height)


def assert_svg(path: Path) -> None:
    data = path.read_text()
    assert data.startswith(("<?xml", "<svg")), data[:40]
    assert "</svg>" in data


def assert_drawn(result: Any, out: Path) -> None:
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == f"wrote {out}"
    leftovers = [p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers, leftovers


def test_a_kind_without_a_picture_is_one_line() -> None:
    with pytest.raises(ResultFileError, match="cannot plot a result of kind 'other'"):
        plot_document("other", {})


@pytest.mark.parametrize("name", [*SAVED, "serve", "reload"])
def test_saved_result_draws_as_png(name: str, saved: dict[str, Path], tmp_path: Path, matplotlib: Any) -> None:
    out = tmp_path / f"{name}.png"
    assert_drawn(run_cli(["plot", str(saved[name]), "-o", str(out)]), out)
    assert_png(out, matplotlib)


@pytest.mark.parametrize("name", [*SAVED, "serve", "reload"])
def test_saved_result_draws_as_svg(name: str, saved: dict[str, Path], tmp_path: Path, matplotlib: Any) -> None:
    out = tmp_path / f"{name}.svg"
    assert_drawn(run_cli(["plot", str(saved[name]), "-o", str(out)]), out)
    assert_svg(out)


@pytest.mark.parametrize("name", ["latency", "latency-compare"])
def test_cdf(name: str, saved: dict[str, Path], tmp_path: Path, matplotlib: Any) -> None:
    out = tmp_path / "cdf.png"
    assert_drawn(run_cli(["plot", str(saved[name]), "--cdf", "-o", str(out)]), out)
    assert_png(out, matplotlib)
    kind, document = load(saved[name])
    ax = plot_document(kind, document, PlotOptions(cdf=True)).axes[0]
    assert ax.get_xscale() == "log"
    assert ax.get_lines(), "no CDF lines drawn"


def test_cdf_is_refused_where_it_does_not_apply(saved: dict[str, Path], tmp_path: Path, matplotlib: Any) -> None:
    out = tmp_path / "order.png"  # every kind: tests/test_plot_options_every_kind.py
    assert_one_error_line(run_cli(["plot", str(saved["compare"]), "--cdf", "-o", str(out)]), 2, "--cdf")
    assert not out.exists()


def test_histogram_uses_mmhistogram_buckets_and_marks_percentiles(saved: dict[str, Path], matplotlib: Any) -> None:
    kind, document = load(saved["latency-compare"])
    fig = plot_document(kind, document)
    ax = fig.axes[0]
    ticks = list(ax.get_xticks())
    assert ticks[:3] == [0, 1, 2] and all(b == 2 * a for a, b in zip(ticks[1:], ticks[2:], strict=False))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("blocking: p50 ") and "p99.9" in label for label in labels), labels
    assert any(label.startswith("epoll: p50 ") for label in labels), labels
    # p50, p99 and p99.9 of each of the two runs
    vertical = [line for line in ax.get_lines() if len(set(line.get_xdata())) == 1]
    assert len(vertical) == 6


def test_title_option_replaces_the_title_and_is_drawn_inert(
    saved: dict[str, Path], tmp_path: Path, matplotlib: Any
) -> None:
    title = "costs $5 and $\x1b[31m"  # an unbalanced $ would be mathtext, failing at drawing time
    kind, document = load(saved["latency"])
    fig = plot_document(kind, document, PlotOptions(title=title))
    assert fig.get_suptitle() == r"costs \$5 and \$\x1b[31m"
    out = tmp_path / "titled.png"
    assert_drawn(run_cli(["plot", str(saved["latency"]), "--title", title, "-o", str(out)]), out)
    assert_png(out, matplotlib)


@pytest.mark.parametrize("fixture", sorted(p.name for p in V1.glob("*.json")))
def test_version_1_files_draw(fixture: str, tmp_path: Path, matplotlib: Any) -> None:
    out = tmp_path / "v1.png"
    assert_drawn(run_cli(["plot", str(V1 / fixture), "-o", str(out)]), out)
    assert_png(out, matplotlib)


def test_command_line_end_to_end(saved: dict[str, Path], tmp_path: Path, matplotlib: Any) -> None:
    out = tmp_path / "latency.PNG"  # the suffix in any case
    done = _accept_order("plot", str(saved["latency-compare"]), "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == f"wrote {out}"
    assert_png(out, matplotlib)


def test_replaces_an_existing_picture(saved: dict[str, Path], tmp_path: Path, matplotlib: Any) -> None:
    out = tmp_path / "again.svg"
    out.write_text("old")
    assert_drawn(run_cli(["plot", str(saved["run"]), "-o", str(out)]), out)
    assert_svg(out)


def test_no_runs_still_draws(saved: dict[str, Path], tmp_path: Path, matplotlib: Any) -> None:
    document = json.loads(saved["compare"].read_text())
    document["runs"] = []
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(document))
    out = tmp_path / "empty.png"
    assert_drawn(run_cli(["plot", str(empty), "-o", str(out)]), out)
    assert_png(out, matplotlib)


# -- errors: one line each ------------------------------------------------------------------------------

BLOCK_MATPLOTLIB = """
import sys

class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Block())
for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
    del sys.modules[name]
from accept_order.cli import main
sys.argv = ["accept-order", *sys.argv[1:]]
main(prog_name="accept-order")
"""


def test_without_matplotlib_one_line_and_exit_1(saved: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "none.png"
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_MATPLOTLIB, "plot", str(saved["latency"]), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"accept-order: error: {NEEDS_MATPLOTLIB}\n"
    assert NEEDS_MATPLOTLIB == (
        "plotting needs matplotlib: pip install 'accept-order[plot]', or from a clone: pip install '.[plot]'"
    )
    assert not out.exists()


@pytest.mark.parametrize("suffix", ["x.gif", "x", "x.png.txt"])
def test_other_suffixes_are_a_usage_error(suffix: str, saved: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / suffix
    assert_one_error_line(run_cli(["plot", str(saved["run"]), "-o", str(out)]), 2, "--output", ".png or .svg")
    assert not out.exists()


def test_output_is_required(saved: dict[str, Path]) -> None:
    assert_one_error_line(run_cli(["plot", str(saved["run"])]), 2, "--output")


def test_output_must_not_be_a_directory_or_symlink(saved: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "folder.png"
    folder.mkdir()
    assert_one_error_line(run_cli(["plot", str(saved["run"]), "-o", str(folder)]), 2, "is a directory")
    link = tmp_path / "link.png"
    os.symlink(tmp_path / "elsewhere.png", link)
    assert_one_error_line(run_cli(["plot", str(saved["run"]), "-o", str(link)]), 2, "symbolic link")
    assert not (tmp_path / "elsewhere.png").exists()


def test_missing_input_one_line_and_exit_1(tmp_path: Path, matplotlib: Any) -> None:
    out = tmp_path / "x.png"
    missing = tmp_path / "missing.json"
    assert_one_error_line(run_cli(["plot", str(missing), "-o", str(out)]), 1, "cannot read", "missing.json")
    assert not out.exists()


def test_malformed_result_one_line_and_exit_1(saved: dict[str, Path], tmp_path: Path, matplotlib: Any) -> None:
    document = json.loads(saved["latency"].read_text())
    del document["histogram"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document))
    out = tmp_path / "x.png"
    assert_one_error_line(run_cli(["plot", str(broken), "-o", str(out)]), 1, "broken.json: histogram: missing")
    assert not out.exists()


@pytest.mark.parametrize("cdf", [False, True], ids=["histogram", "cdf"])
def test_a_run_from_several_client_hosts_draws_each_hosts_durations(cdf: bool, matplotlib: Any) -> None:
    """Beside the whole run, each client host's own durations: a line and a legend entry of its own, with its
    percentiles (a host far from the server, or a slow one, shows as a line apart)."""
    from accept_order.core.histogram import LatencyHistogram

    kind, document = load(V1.parent / "v2" / "latency-hosts.json")
    fig = plot_document(kind, document, PlotOptions(cdf=cdf))
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    for host in document["hosts"]:
        histogram = LatencyHistogram.from_dict(host["histogram"])
        p50 = histogram.percentile(50) / 1000
        assert any(label.startswith(f"from {host['destination']}: p50 {p50:.2f}") for label in labels), labels
    ax = fig.axes[0]
    if cdf:  # the run's step line and one per host (the percentiles' marks are vertical lines)
        assert len([line for line in ax.get_lines() if len(set(line.get_xdata())) > 1]) == 1 + 2
    else:  # the run's fill and line, and one line per host
        assert len(ax.patches) == 2 + 2


def test_a_run_from_one_host_or_a_comparison_draws_no_host_lines(saved: dict[str, Path], matplotlib: Any) -> None:
    for name in ("latency", "latency-compare"):
        kind, document = load(saved[name])
        labels = [t.get_text() for t in plot_document(kind, document).axes[0].get_legend().get_texts()]
        assert not any(label.startswith("from ") for label in labels), labels


def test_a_run_cut_short_says_so_in_its_picture(matplotlib: Any) -> None:
    """A latency run Ctrl-C stopped: its legend says after how many connections, and the footer's amount is the
    plan (it read '5 s' of a 1.53 s run as if it had run its course)."""
    kind, document = load(V1.parent / "v2" / "latency.json")
    document = {**document, "interrupted": True}
    fig = plot_document(kind, document)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    driven = document["summary"]["count"] + sum(document["errors"].values())
    assert any(label.endswith(f"(interrupted after {driven} connections)") for label in labels), labels
    footer = " ".join(t.get_text() for t in fig.texts)
    assert " planned, " in footer, footer
    kind, whole = load(V1.parent / "v2" / "latency.json")
    labels = [t.get_text() for t in plot_document(kind, whole).axes[0].get_legend().get_texts()]
    assert not any("interrupted" in label for label in labels), labels
