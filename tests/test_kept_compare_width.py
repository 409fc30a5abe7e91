"""The 'kept connections by mode' table at the widths a report is read at.

Since its first and later p99 were added it needed 104 columns for two nginx runs of 4 workers (`latency --server
nginx -w 4 --modes epoll,reuseport --pool -c 32 --requests-per-connection 0`, docs/howto/behind-a-proxy.md): at 100
its 'later p99' went to a second part, and the builtin runs' per-worker figures broke over two lines, the rest of a
list reading as another row's. Its heads now take two lines and the overall p99 (latency by mode's, printed above it)
is left out: at 100 and 120 it is one table with every figure; at 80 it is stacked in two parts, each repeating the
mode, every worker's list on one line; at 40 no line is wider than 40, a list that cannot fit wrapping between its
figures. Every figure of the cells is in the report at each width."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from cli_runs import run_cli
from test_small_sentences_held_nothing import pool_run

from accept_order.core.first_requests import FirstRequests
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.result import LatencyCompareResult, LatencyResult
from accept_order.results.envelope import save

# the nginx runs of 08:18 (Linux 6.18, 2 vCPUs, load 2.9): connections and requests per worker, p99 per worker (µs)
RUNS = {
    "epoll": ((11, 17, 3, 1), (997, 820, 878, 859), (73_910, 135_510, 30_190, 12_130)),
    "reuseport": ((7, 9, 7, 9), (389, 410, 378, 367), (148_030, 159_750, 310_700, 237_540)),
}


def _worker(held: int, n: int, p99_us: int) -> tuple[LatencyHistogram, LatencyHistogram]:
    """A worker's requests and its connections' first ones: `held` first requests at 6.61 ms, the other n - held
    98 of 100 at 1 ms and the rest at p99_us (so its p99 is p99_us)."""
    firsts, every = LatencyHistogram(), LatencyHistogram()
    firsts.add(6_610, held)
    later = n - held
    every.merge(firsts)
    every.add(1000, later * 98 // 100)
    every.add(p99_us, later - later * 98 // 100)
    return every, firsts


def _sum(parts: tuple[LatencyHistogram, ...]) -> LatencyHistogram:
    every = LatencyHistogram()
    for h in parts:
        every.merge(h)
    return every


def _run(mode: str) -> LatencyResult:
    held, served, p99s = RUNS[mode]
    each = [_worker(h, n, us) for h, n, us in zip(held, served, p99s, strict=True)]
    workers, firsts = tuple(w for w, _ in each), tuple(f for _, f in each)
    return dataclasses.replace(
        pool_run(mode, held, 1000),
        server=ServerSpec(kind="nginx", mode=mode, workers=4).validated(),
        served=served,
        histogram=_sum(workers),
        worker_histograms=workers,
        first_requests=FirstRequests(_sum(firsts), firsts),
    )


def _later_p99(mode: str) -> str:
    run = _run(mode)
    assert run.first_requests is not None
    firsts = dict(run.first_requests.every.to_dict()["counts"])
    later = LatencyHistogram()
    for us, n in run.histogram.to_dict()["counts"]:
        if n > firsts.get(us, 0):
            later.add(us, n - firsts.get(us, 0))
    return f"{later.percentile(99.0) / 1000:.2f}"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kept-width") / "nginx.json"
    save(path, "latency-compare", LatencyCompareResult((_run("epoll"), _run("reuseport"))).to_dict())
    return path


def _table(path: Path, columns: int) -> list[str]:
    result = run_cli(["show", str(path)], columns=columns)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = lines.index("kept connections by mode")
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("nginx epoll: "))
    return lines[start:end]


def _rows(lines: list[str]) -> list[str]:
    """The lines that start with a mode: each part's rows."""
    return [line for line in lines if re.match(r"^ nginx (epoll|reuseport) ", line)]


def _cells(mode: str) -> list[str]:
    held, served, p99s = RUNS[mode]
    return [" ".join(map(str, held)), " ".join(map(str, served)), " ".join(f"{us / 1000:.2f}" for us in p99s)]


@pytest.mark.parametrize("columns", [100, 120])
def test_one_table_with_every_figure_at_100_and_wider(saved: Path, columns: int) -> None:
    lines = _table(saved, columns)
    assert max(map(len, lines)) <= 100, "\n".join(lines)
    rows = _rows(lines)
    assert len(rows) == 2, "\n".join(lines)  # one part: no list broken over two lines, nothing stacked
    for mode, row in zip(RUNS, rows, strict=True):
        for cell in _cells(mode):
            assert cell in row, (cell, row)
        assert row.split()[-2:] == ["6.61", _later_p99(mode)], row  # first p99, later p99


def test_stacked_at_80_with_each_workers_list_on_one_line(saved: Path) -> None:
    lines = _table(saved, 80)
    assert max(map(len, lines)) <= 80, "\n".join(lines)
    rows = _rows(lines)
    assert len(rows) == 4, "\n".join(lines)  # two parts, each repeating the mode
    for mode in RUNS:
        mine = " | ".join(row for row in rows if row.split()[1] == mode)
        for cell in _cells(mode):
            assert cell in mine, (cell, mine)
    # no row's continuation: every line with a figure in it is a mode's row
    figures = [line for line in lines if re.search(r"\b\d+(\.\d+)?\b", line)]
    assert figures == rows, "\n".join(lines)


def test_no_line_wider_than_40_at_40(saved: Path) -> None:
    lines = _table(saved, 40)
    assert max(map(len, lines)) <= 40, "\n".join(lines)
    said = " ".join(" ".join(lines).split())
    for figure in ("310.70", "237.54", "12.13", "997", "0.998"):
        assert figure in said, said
