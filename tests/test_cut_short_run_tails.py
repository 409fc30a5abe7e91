"""latency --modes epoll,reuseport --duration 3s, Ctrl-C 0.21 s into reuseport: 'Verdict: epoll is the only
one that served every connection (reuseport lost 10): no tail to compare'. The 10 were in flight when the
run was stopped (counted as aborted, the stop's), not lost by reuseport; a run cut short is left out of the
comparison for being cut short, and the verdict says so."""

from __future__ import annotations

from dataclasses import replace

from accept_order.analysis.tails import tail_verdict
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.protocol import ABORTED
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.result import LatencyResult

ENV = Environment("Linux", "6.0", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")
TIGHT = [1000] * 98 + [1100, 1200]
WIDE = [1000] * 50 + [9000] * 49 + [20000]


def run(mode: str, values_us: list[int]) -> LatencyResult:
    hist = LatencyHistogram()
    for us in values_us:
        hist.add(us)
    return LatencyResult(
        server=ServerSpec(mode=mode, workers=2).validated(),
        load=ConcurrentLoad(connections=None, duration_s=3.0, concurrency=20).validated(),
        environment=ENV,
        port=1234,
        histogram=hist,
        errors={},
        served=(len(values_us) // 2, len(values_us) - len(values_us) // 2),
        # most accepts in one wakeup not counted (None): a cap's binding is not judged (sweep_verdict.never_bound)
        counters=(WorkerCounters(0, 100, 5, 5, 0, None), WorkerCounters(1, 101, 5, 5, 0, None)),
        drivers=(DriverStats(0, 4, len(values_us), 1.0, 0.2, 0.1),),
        wall_s=3.0,
    )


def test_a_run_cut_short_is_not_said_to_have_lost_its_aborted_connections() -> None:
    cut = replace(run("reuseport", TIGHT), errors={ABORTED: 10}, interrupted=True, wall_s=0.21)
    verdict = tail_verdict([run("epoll", WIDE), cut])
    assert "lost" not in verdict.text, verdict.text
    assert "reuseport was cut short" in verdict.text and verdict.tightest is None, verdict.text


def test_the_runs_that_ran_whole_are_still_compared() -> None:
    cut = replace(run("blocking", TIGHT), errors={ABORTED: 3}, interrupted=True, wall_s=0.5)
    verdict = tail_verdict([run("epoll", WIDE), run("reuseport", TIGHT), cut])
    assert verdict.tightest == "reuseport", verdict.text
    assert verdict.text.endswith("(blocking was cut short by the stop: not compared)"), verdict.text
    # whole runs alone: as before
    assert tail_verdict([run("epoll", WIDE), run("reuseport", TIGHT)]).tightest == "reuseport"


def test_a_sweep_cap_cut_short_is_not_said_to_have_lost_connections() -> None:
    """sweep -n 2000 -c 20 stopped 0.11 s into its first cap: 'One cap only (1 limit): nothing to compare it
    with; it lost connections (18 of 476 failed: 18 aborted)'."""
    from accept_order.experiments.latency.sweep_verdict import sweep_verdict

    def capped(batch: int, values_us: list[int]) -> LatencyResult:
        r = run("epoll", values_us * 50)  # enough latencies for the samples to tell a p99 apart (one_run.py)
        return replace(r, server=r.server.replace(accept_batch=batch))

    cut = replace(capped(1, TIGHT), errors={ABORTED: 18}, interrupted=True, wall_s=0.11)
    alone = sweep_verdict([cut])
    assert "lost" not in alone.text and "cut short by the stop" in alone.text, alone.text
    three = sweep_verdict([capped(1, WIDE), capped(4, TIGHT), replace(cut, server=cut.server.replace(accept_batch=32))])
    assert three.pick == ("4 limit",) and three.lost == () and three.ranking[-1] == "32 limit", three
    assert three.text.startswith("32 limit was cut short by the stop: not compared. Pick 4 limit"), three.text
