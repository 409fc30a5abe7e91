"""The queueing model judges only what its numbers can carry: a run of 5 connections has a p99 that is its
slowest one, and one stall there made the model say "something else is at work" and name the machine's load
as the cause. Under MIN_JUDGED measurements the sentence says the run was too small to judge and what would
take, and a round of --repeat with such a run says nothing either way."""

from __future__ import annotations

import dataclasses

from conftest import run_cli

from accept_order.analysis.model_check import MIN_JUDGED
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_verdict import model_line, queueing_explains
from accept_order.experiments.latency.result import LatencyResult

ENV = Environment("Linux", "6.0", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")


def run_of(mode: str, measured_us: list[int]) -> LatencyResult:
    """2 workers, 4 clients, each connection 1 ms of service as the workers timed it (c·S/N = 2 ms predicted)."""
    hist = LatencyHistogram()
    for us in measured_us:
        hist.add(us)
    counters = tuple(WorkerCounters(i, 100 + i, service_us=((1000, 50),), service_sum_us=50_000) for i in range(2))
    run = LatencyResult(
        server=ServerSpec(mode=mode, workers=2).validated(),
        load=ConcurrentLoad(connections=len(measured_us), concurrency=4).validated(),
        environment=ENV,
        port=1234,
        histogram=hist,
        errors={},
        served=(len(measured_us) // 2, len(measured_us) - len(measured_us) // 2),
        counters=counters,
        drivers=(DriverStats(0, 4, len(measured_us), 1.0, 0.2, 0.0),),
        wall_s=1.0,
    )
    return dataclasses.replace(run, model=predict(run))


def test_five_connections_are_too_few_to_name_a_cause() -> None:
    tiny = run_of("blocking", [2000] * 4 + [9000])  # one stall: the p99 of 5 is the slowest
    line = model_line([tiny]) or ""
    assert f"too few connections to judge (5 measured): a p99 needs {MIN_JUDGED} or more" in line, line
    assert f"-n {MIN_JUDGED} or more would tell" in line, line
    assert "something else" not in line and "above what queueing predicts" not in line, line
    # the same stall in a run large enough is judged as before
    judged = run_of("blocking", [2000] * (MIN_JUDGED - MIN_JUDGED // 20) + [9000] * (MIN_JUDGED // 20))
    assert "something else is at work" in (model_line([judged]) or "")


def test_a_comparison_with_one_small_run_judges_only_the_other() -> None:
    stalled = [2000] * (MIN_JUDGED - MIN_JUDGED // 20) + [9000] * (MIN_JUDGED // 20)  # 5% stalled
    small, large = run_of("blocking", [2000] * 4 + [9000]), run_of("reuseport", stalled)
    line = model_line([small, large]) or ""
    assert "too few connections to judge (blocking 5 measured)" in line, line
    assert "reuseport above what queueing predicts" in line and "blocking above" not in line, line
    assert queueing_explains([small, large]) is None  # the round says nothing
    assert queueing_explains([large, run_of("blocking", stalled)]) is False


def test_latency_of_five_connections_says_so() -> None:
    result = run_cli(["latency", "-n", "5", "-c", "4", "-w", "2", "--work-us", "200"], columns=2000)
    assert result.exit_code == 0, result.output
    model = next(li for li in result.stdout.splitlines() if li.startswith("Model: measured p99"))
    assert "too few connections to judge (5 measured)" in model, model
    assert "something else" not in model, model
