"""mmhistogram's rows on a narrow terminal: the bar narrows so each bucket stays one line with its count whole
(at 40 columns every 50-star row used to fold in two); at 80 columns and more, and off a terminal, the rows are
mmhistogram's own 50 columns, byte for byte."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from accept_order.core.histogram import COLUMNS, LatencyHistogram, histogram_lines
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.compare_report import compare_report
from accept_order.experiments.latency.report import latency_report
from accept_order.experiments.latency.result import LatencyResult
from accept_order.render.histogram import Mmhistogram

ROW = re.compile(r"^ *(\d+|value) \|[ *-]*(?: \d+| count)$")
# A tail wide enough for 8 buckets, and a count of six digits in the biggest (66580 as the operator saw).
COUNTS = {500: 3, 3_000: 9_000, 20_000: 123_456, 70_000: 4_000, 150_000: 1}


def histogram() -> LatencyHistogram:
    hist = LatencyHistogram()
    for us, n in COUNTS.items():
        for _ in range(n):
            hist.add(us)
    return hist


def result(mode: str, hist: LatencyHistogram) -> LatencyResult:
    return LatencyResult(
        server=ServerSpec(mode=mode, workers=2).validated(),
        load=ConcurrentLoad(connections=hist.count, concurrency=4).validated(),
        environment=Environment("Linux", "6.18", "x86_64", 2, 4096, "3.11", "host", "2026-11-27T00:00:00+00:00"),
        port=1234,
        histogram=hist,
        errors={},
        served=(hist.count, 0),
        counters=(WorkerCounters(0, 100, 5, 5, 0, 2), WorkerCounters(1, 101, 5, 5, 0, 1)),
        drivers=(DriverStats(0, 4, hist.count, 1.0, 0.2, 0.1),),
        wall_s=2.0,
        title=f"Duration in ms ({mode})",
    )


def printed(renderable: object, width: int, pipe: bool = False) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    with console.capture() as capture:
        console.print(renderable, crop=False, no_wrap=pipe or None)
    return capture.get().splitlines()


def rows(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.endswith("):") and line.startswith("Duration"))
    return lines[start + 1 : start + 1 + 1 + 9]  # the header and buckets 0, 1, 2, 4, ... 128


@pytest.mark.parametrize("width", [40, 41, 47, 55, 64, 70, 79])
def test_each_bucket_is_one_line_with_its_count_whole_on_a_narrow_terminal(width: int) -> None:
    hist = histogram()
    shown = rows(printed(Mmhistogram("Duration in ms (epoll)", hist), width))
    assert all(ROW.match(line) and len(line) <= width for line in shown), shown
    counts = ["count", "3", "0", "9000", "0", "0", "123456", "0", "4000", "1"]
    assert [line.rsplit(" ", 1)[1] for line in shown] == counts
    assert shown[6].count("*") == len(shown[0].split("|")[1].split(" ")[0])  # the biggest fills the bar


@pytest.mark.parametrize("width", [80, 100, 200])
def test_rows_are_mmhistograms_own_at_80_columns_and_more_and_off_a_terminal(width: int) -> None:
    hist = histogram()
    own = histogram_lines("Duration in ms (epoll)", hist)
    assert own[1] == " value |" + "-" * COLUMNS + " count"
    assert rows(printed(Mmhistogram("Duration in ms (epoll)", hist), width)) == own[1:]
    assert rows(printed(Mmhistogram("Duration in ms (epoll)", hist), 40, pipe=True)) == own[1:]


def test_the_latency_and_compare_reports_fit_their_histograms_at_40_columns() -> None:
    hist = histogram()
    for report in (latency_report(result("epoll", hist)), compare_report([result("epoll", hist)], {})):
        shown = rows(printed(report, 40))
        assert all(ROW.match(line) and len(line) <= 40 for line in shown), shown
