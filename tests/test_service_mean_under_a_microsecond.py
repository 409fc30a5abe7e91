"""`sweep -n 3000 -c 32` (built-in workers, no --work) read 'timed by the workers (mean 0 ms, 0 ms to 0 ms by
worker, 3000 connections)': each connection's service took under a microsecond, the workers keep whole
microseconds rounded down, and the mean rounded to the µs said 0 ms as if nothing had been measured. Now the mean
is said to the precision it has: 'under 1 µs', or the microsecond-wide range a mean of rounded-down times lies in."""

from __future__ import annotations

import dataclasses

from rich.console import Console

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_report import model_report
from accept_order.experiments.latency.result import LatencyResult
from accept_order.experiments.latency.sweep_report import sweep_report
from accept_order.render.service_mean import service_mean

ENV = Environment("Linux", "6.0", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")


def run_timed(per_worker: list[dict[int, int]], batch: int = 0) -> LatencyResult:
    """2 built-in workers, 300 connections, each worker's service times (µs -> count) as it stored them."""
    hist = LatencyHistogram()
    for _ in range(300):
        hist.add(1500)
    counters = tuple(
        WorkerCounters(
            i, 100 + i, service_us=tuple(sorted(t.items())), service_sum_us=sum(us * n for us, n in t.items())
        )
        for i, t in enumerate(per_worker)
    )
    run = LatencyResult(
        server=ServerSpec(mode="epoll", workers=2, accept_batch=batch).validated(),
        load=ConcurrentLoad(connections=300, concurrency=32).validated(),
        environment=ENV,
        port=1234,
        histogram=hist,
        errors={},
        served=(150, 150),
        counters=counters,
        drivers=(DriverStats(0, 32, 300, 1.0, 0.2, 0.0),),
        wall_s=1.0,
    )
    return dataclasses.replace(run, model=predict(run))


def service_line(runs: list[LatencyResult]) -> str:
    texts = [str(getattr(part, "plain", "")) for part in model_report(runs)]
    return next(t for t in texts if t.startswith("service time: "))


def test_every_time_under_a_microsecond_reads_under_one_not_zero() -> None:
    line = service_line([run_timed([{0: 150}, {0: 150}])])
    assert "mean under 1 µs" in line, line
    assert "0 ms" not in line and "by worker" not in line, line


def test_a_mean_of_a_few_microseconds_is_its_range() -> None:
    # 0.6 µs stored on average (rounded down): the true mean lies between 0.6 and 1.6 µs
    line = service_line([run_timed([{0: 60, 1: 90}, {0: 60, 1: 90}])])
    assert "mean 0.6-1.6 µs" in line and "rounded down" in line, line
    assert "by worker" not in line, line  # both workers alike, within the clock's microsecond
    apart = service_line([run_timed([{0: 150}, {3: 150}])])
    assert "mean 1.5-2.5 µs, 0-1 to 3-4 µs by worker" in apart, apart


def test_larger_means_keep_their_rounded_figure() -> None:
    line = service_line([run_timed([{40: 150}, {60: 150}])])
    assert "mean 50 µs, 40 µs to 60 µs by worker" in line, line
    # a CPU-derived or configured mean is not rounded down by any clock: no range, a tenth of a µs below 10 µs
    assert service_mean(0.4, [], rounded_down=False) == "mean 0.4 µs"
    assert service_mean(37.4, [], rounded_down=False) == "mean 37 µs"


def test_sweep_report_of_runs_without_work() -> None:
    runs = [run_timed([{0: 150}, {0: 150}], batch=b) for b in (1, 0)]
    console = Console(width=300, record=True, color_system=None)
    console.print(sweep_report(runs))
    text = console.export_text()
    assert "1 limit: timed by the workers (mean under 1 µs" in text, text
    assert "no limit: timed by the workers (mean under 1 µs" in text, text
    assert "mean 0 ms" not in text, text


def test_the_range_holds_the_mean_when_its_ends_are_rounded() -> None:
    """Each end rounded to the nearest tenth could leave the mean out: 2/3 of a µs stored on average lies in
    [0.67, 1.67), which '0.7-1.7' does not hold; the ends are widened outward (a review's find)."""
    line = service_line([run_timed([{0: 50, 1: 100}, {0: 50, 1: 100}])])
    assert "mean 0.6-1.7 µs" in line, line
    apart = service_mean(0.66, [0.33, 1.66], rounded_down=True)
    assert apart.startswith("mean 0.6-1.7 µs, 0.3-1.4 to 1.6-2.7 µs by worker"), apart
    # a tenth a float misses by its last bit is that tenth, not the one below
    assert service_mean(0.29999999999999993, [], rounded_down=True).startswith("mean 0.3-1.3 µs")
