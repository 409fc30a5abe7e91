"""--repeat: the variants run in interleaved rounds (A B A B), every figure is reported with its range, and
the verdict says how many runs agree; a kernel-guaranteed order agrees in every run.

The verdict over the runs is checked on synthetic rounds, where the inputs decide it (a tail that is the
tightest in every round, in 4 of 5, in 3 of 5, in none), and the live runs are checked against the verdict
of the rounds they saved."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import run_cli
from rich.console import Console

from accept_order.analysis.significance import t95, t_test
from accept_order.analysis.stability import Spread, latency_stability, order_stability
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.measures import ConnectionRecord, DriverStats, Environment, Verdict, WorkerCounters
from accept_order.core.run_warnings import WarningKind
from accept_order.core.spec import ConcurrentLoad, SequentialLoad, ServerSpec
from accept_order.experiments.documents import render_document
from accept_order.experiments.latency.result import LatencyResult
from accept_order.experiments.order.result import RunResult
from accept_order.experiments.repeat.result import machine_warnings
from accept_order.experiments.repeat.run import interleaved

ENV = Environment("Linux", "6.0", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")
TIGHT = [30_000] * 98 + [29_000, 31_000]  # p99 30 ms, small deviation
WIDE = [2_000] * 25 + [30_000] * 50 + [60_000] * 24 + [140_000]  # p99 60 ms, wide


def latency(mode: str, values_us: list[int]) -> LatencyResult:
    hist = LatencyHistogram()
    for us in values_us:
        hist.add(us)
    return LatencyResult(
        server=ServerSpec(mode=mode, workers=2).validated(),
        load=ConcurrentLoad(connections=len(values_us), concurrency=4).validated(),
        environment=ENV,
        port=1234,
        histogram=hist,
        errors={},
        served=(len(values_us) // 2, len(values_us) - len(values_us) // 2),
        counters=(WorkerCounters(0, 100, 5, 5, 0, 1), WorkerCounters(1, 101, 5, 5, 0, 1)),
        drivers=(DriverStats(0, 4, len(values_us), 1.0, 0.2, 0.1),),
        wall_s=2.0,
    )


def ordered(mode: str, pattern: str) -> RunResult:
    """A sequential run whose verdict is `pattern` (the records are not what the verdict is read from)."""
    records = tuple(ConnectionRecord(k, k % 2, 100 + k % 2, 10 * k, 5) for k in range(4))
    counters = tuple(WorkerCounters(i, 100 + i, 2, 2, 0, 1, voluntary_switches=2) for i in range(2))
    verdict = Verdict(pattern, None, 4, 4, "why", 1.0, 1.0, True, 1.0)
    return RunResult(ServerSpec(mode=mode, workers=2), SequentialLoad(connections=4), ENV, 1234, records, counters,
                     verdict)  # fmt: skip


def text_of(renderable: object) -> str:
    console = Console(width=300, record=True, color_system=None)
    with console.capture() as capture:
        console.print(renderable)
    return capture.get()


BLOCKING_WINS = [latency("blocking", TIGHT), latency("reuseport", WIDE)]
REUSEPORT_WINS = [latency("blocking", WIDE), latency("reuseport", TIGHT)]
NEITHER = [latency("blocking", TIGHT), latency("reuseport", TIGHT)]


def test_rounds_interleave_the_variants() -> None:
    order: list[str] = []
    rounds = interleaved(["A", "B"], 3, lambda v: order.append(v) or v)
    assert order == ["A", "B", "A", "B", "A", "B"] and rounds == [["A", "B"]] * 3


def test_a_signal_after_a_rounds_last_load_keeps_the_round() -> None:
    """The last variant of round 2 finished its load, then a signal came (RunInterrupted with its whole
    result): round 2 is complete and kept; a signal that cut a load short leaves its round out of the rounds,
    kept apart as the cut round (its finished variants, then the part of the one it cut)."""
    from types import SimpleNamespace

    from accept_order.experiments.session import RunInterrupted

    def run(signal_at: int, whole: bool) -> tuple[list[list[str]], list[str]]:
        calls = iter(range(10))

        def one(v: str) -> object:
            if next(calls) == signal_at:
                raise RunInterrupted([SimpleNamespace(name=v, interrupted=not whole)], KeyboardInterrupt())
            return SimpleNamespace(name=v, interrupted=False)

        with pytest.raises(RunInterrupted) as stop:
            interleaved(["A", "B"], 3, one)
        (so_far,) = stop.value.results  # type: ignore[attr-defined]
        assert so_far.asked == 3 and so_far.variants == 2
        return [[r.name for r in row] for row in so_far.rounds], [r.name for r in so_far.cut]

    assert run(3, whole=True) == ([["A", "B"], ["A", "B"]], [])
    assert run(3, whole=False) == ([["A", "B"]], ["A", "B"])
    assert run(2, whole=True) == ([["A", "B"]], ["A"])  # round 2's first variant: the round is not complete
    assert run(1, whole=False) == ([], ["A", "B"])  # the first round cut: its finished variant is not lost


def test_spread_is_median_and_range() -> None:
    s = Spread.of([3.0, 1.0, 2.0, 10.0])
    assert (s.median, s.low, s.high) == (2.5, 1.0, 10.0)


# -- the verdict over the runs, from inputs that decide it ----------------------------------------------


def at(mode: str, p99_ms: float, batch: int | None = None, failed: int = 0) -> LatencyResult:
    """A run whose p99 is p99_ms (and whose p99.9 and deviation scale with it: a lower p99 is a lower tail)."""
    us = int(p99_ms * 1000)
    run = latency(mode, [us // 2] * 50 + [us] * 49 + [us * 6 // 5])
    if batch is not None:
        run = dataclasses.replace(run, server=run.server.replace(accept_batch=batch))
    return dataclasses.replace(run, errors={"timeout": failed}) if failed else run


def test_significance_is_pyperfs_two_sample_t_test() -> None:
    # means 2 and 5, pooled variance 1, n 3: t = -3 / sqrt(2/3) = -3.67; 4 degrees of freedom: 2.776
    test = t_test([1, 2, 3], [4, 5, 6])
    assert test.significant and test.t == pytest.approx(-3.674, abs=1e-3) and test.critical == 2.776
    near = t_test([1, 2, 3], [2, 3, 4])  # t = -1.22
    assert not near.significant and near.t == pytest.approx(-1.2247, abs=1e-4)
    assert [t95(df) for df in (1, 4, 30, 31, 45, 250)] == [12.706, 2.776, 2.042, 2.042, 2.021, 1.960]
    assert t_test([5], [7]).critical is None and not t_test([5], [7]).significant  # one run each: untestable
    assert t_test([5, 5], [7, 7]).significant and not t_test([5, 5], [5, 5]).significant  # no spread at all


def test_a_lower_p99_in_every_run_with_a_clear_gap_is_significant() -> None:
    rounds = [[at("blocking", 30 + k), at("reuseport", 60 - k)] for k in range(3)]
    verdict = latency_stability(rounds)
    assert (verdict.winner, verdict.agree, verdict.rounds, verdict.conclusive) == ("blocking", 3, 3, True)
    assert verdict.text == "blocking has the lowest p99 in 3/3 runs, significantly lower than reuseport (t-test at 95%)"
    assert verdict.pairs == (
        "blocking vs reuseport: lower p99 in 3/3 runs (reuseport in 0), lower whole tail in 3/3 (reuseport in 0); "
        # t = (31 - 59) / sqrt(2 * 1 / 3): pooled variance 1
        "mean p99 31.00 vs 59.00 ms, significant (t=-34.29, |t| ≥ 2.78 at 95%)",
    )


def test_four_wins_of_five_with_one_large_loss_are_not_significant() -> None:
    """Counting alone would crown blocking (4/5); the t-test says the p99s do not differ significantly."""
    rounds = [[at("blocking", 30), at("reuseport", 31)]] * 4 + [[at("blocking", 30), at("reuseport", 1)]]
    verdict = latency_stability(rounds)
    assert (verdict.winner, verdict.agree, verdict.conclusive) == ("blocking", 4, False)
    assert verdict.text == (
        "blocking has the lowest p99 in 4/5 runs, not significantly lower than the other (t-test at 95%)"
    )
    assert verdict.pairs[0].startswith("blocking vs reuseport: lower p99 in 4/5 runs (reuseport in 1)")
    assert "not significant (t=0.83, |t| ≥ 2.31 at 95%)" in verdict.pairs[0]  # 8 degrees of freedom


def test_the_worst_in_every_run_is_named_while_the_best_varies() -> None:
    """Issue 19: `sweep --accept-batch 1,4,32,0 --repeat` said "inconclusive" although no limit was the
    worst in every run. The best varies (1 limit in 2 runs, 4 limit in 1): no best is named."""
    p99s = [(10, 11, 30), (12, 10, 32), (11, 12, 31)]
    rounds = [[at("epoll", a, 1), at("epoll", b, 4), at("epoll", c, 0)] for a, b, c in p99s]
    verdict = latency_stability(rounds)
    assert verdict.winner is None and verdict.conclusive is True
    assert verdict.text == (
        "no limit has the highest p99 in 3/3 runs, significantly higher than every other (t-test at 95%)"
    )
    assert verdict.pairs[0] == (
        "1 limit vs 4 limit: lower p99 in 2/3 runs (4 limit in 1), lower whole tail in 2/3 (4 limit in 1); mean p99 "
        "11.00 vs 11.00 ms, not significant (t=0.00, |t| ≥ 2.78 at 95%)"
    )
    assert len(verdict.pairs) == 3 and all(", significant (" in p for p in verdict.pairs[1:])


def test_a_variant_that_lost_connections_is_never_a_runs_lowest() -> None:
    rounds = [[at("blocking", 20, failed=5), at("reuseport", 30), at("epoll", 40)] for _ in range(3)]
    verdict = latency_stability(rounds)
    assert verdict.winner == "reuseport"  # blocking's p99 was lower, but it lost connections every time
    assert verdict.text.startswith("reuseport has the lowest p99 of the variants that served every connection in 3/3")
    # With two variants, the one that served all ranks first in a run where the other lost connections.
    two = latency_stability(
        [[at("blocking", 20, failed=5), at("reuseport", 30)]] * 2 + [[at("blocking", 35), at("reuseport", 30)]]
    )
    assert two.winner == "reuseport" and two.agree == 3
    assert verdict.text.endswith("; blocking lost connections in 3/3 runs (its latencies cover only what it served)")


def overflowed(run: LatencyResult, shared: bool) -> LatencyResult:
    """The run with ListenOverflows +7 in its evidence, in a shared (host-wide) or a private network namespace."""
    evidence = {"counters": {"TcpExtListenOverflows": 7}, "counters_available": True, "shared_namespace": shared}
    return dataclasses.replace(run, evidence=evidence)


def test_host_wide_overflows_are_no_variants_loss() -> None:
    """Issue 26: a listener elsewhere that never accepts moved the host-wide ListenOverflows during every run of
    a comparison that served every connection; that once read "blocking lost connections in 2/2 runs"."""
    rounds = [[overflowed(at("blocking", 20), shared=True), overflowed(at("reuseport", 30), shared=True)]] * 2
    verdict = latency_stability(rounds)
    assert verdict.winner == "blocking" and "lost connections" not in verdict.text
    assert verdict.text.startswith("blocking has the lowest p99 in 2/2 runs")
    doc = {"of": "latency-compare", "rounds": [[r.to_dict() for r in row] for row in rounds], "machine": {}}
    lines = text_of(render_document("repeat", doc)).splitlines()
    said = "Host-wide ListenOverflows +7 during 4 of 4 runs: not counted as a loss (other traffic moves them too)"
    assert said in lines
    # The same counter in a network namespace of the run's own is that run's loss.
    own = [[overflowed(at("blocking", 20), shared=False), at("reuseport", 30)]] * 2
    assert latency_stability(own).text.endswith(
        "; blocking lost connections in 2/2 runs (its latencies cover only what it served)"
    )
    assert "Host-wide" not in text_of(
        render_document("repeat", {**doc, "rounds": [[r.to_dict() for r in row] for row in own]})
    )


def test_equal_tails_in_every_round_are_inconclusive() -> None:
    verdict = latency_stability([NEITHER] * 2)
    assert (verdict.winner, verdict.agree, verdict.conclusive) == (None, 0, False)
    assert verdict.text == (
        "inconclusive at this size: no variant had the lowest or the highest p99 in 80% of the 2 runs (lowest: "
        "none); try longer runs (-n or --duration), --pin, or more --repeat"
    )
    assert verdict.pairs[0].endswith("mean p99 30.00 vs 30.00 ms, not significant (identical)")


def test_inconclusive_over_kept_connections_says_what_n_counts() -> None:
    """-n counts requests where the connections are kept (--requests-per-connection other than 1), which the advice
    says then; a load of one request a connection (sweep -n 5000 -c 16 --repeat 2 here) read it too, of no kept one."""
    kept = [dataclasses.replace(x, load=dataclasses.replace(x.load, requests_per_connection=0)) for x in NEITHER]
    assert "try longer runs (-n, which counts requests over kept connections, or --duration)" in (
        latency_stability([kept] * 2).text
    )


def test_the_saved_repeat_prints_the_verdict_of_its_rounds() -> None:
    rounds = [BLOCKING_WINS, BLOCKING_WINS, REUSEPORT_WINS]
    doc = {"of": "latency-compare", "rounds": [[r.to_dict() for r in row] for row in rounds], "machine": {}}
    lines = text_of(render_document("repeat", doc)).splitlines()
    verdict = latency_stability(rounds)
    assert [line for line in lines if line.startswith("Verdict:")] == [f"Verdict: {verdict.text}"]
    assert verdict.text.startswith("inconclusive at this size: ")  # blocking lowest in 2/3 only
    assert f"  {verdict.pairs[0]}" in lines


def test_a_repeated_sweep_keeps_seed_001s_columns() -> None:
    rounds = [[at("epoll", 10, 1), at("epoll", 30, 0)]] * 2
    doc = {"of": "sweep", "rounds": [[r.to_dict() for r in row] for row in rounds], "machine": {}}
    header = next(line for line in text_of(render_document("repeat", doc)).splitlines() if "p99 ms" in line)
    assert header.split() == ["mode", "avg", "ms", "p99", "ms", "p99.9", "ms", "dev", "ms", "req/s", "max/wakeup",
                              "errors"]  # fmt: skip


def test_order_verdicts_count_the_runs_that_agree() -> None:
    herd = "thundering herd ({} workers woken per connection); order: no clear order (no idle-order model fits)"
    rounds = [
        [ordered("blocking", "rotation (FIFO among idle workers)"), ordered("poll", herd.format("2.8"))],
        [ordered("blocking", "rotation (FIFO among idle workers)"), ordered("poll", herd.format("3.0"))],
        [ordered("blocking", "most-recent-waiter (LIFO)"), ordered("poll", herd.format("2.9"))],
    ]
    stability = order_stability(rounds)
    assert stability["blocking"].text == "rotation (FIFO among idle workers) in 2/3 runs: the runs disagree"
    assert stability["blocking"].conclusive is False
    # A herd's measured size differs from run to run; the pattern is the same herd.
    expected = (
        "thundering herd (more than one worker woken per connection); order: no clear order (no idle-order model fits)"
    )
    assert stability["poll"].text == f"{expected} in 3/3 runs" and stability["poll"].conclusive is True


# -- live runs -------------------------------------------------------------------------------------------


def test_a_kernel_order_agrees_in_every_run(tmp_path: Path) -> None:
    out = tmp_path / "rep.json"
    result = run_cli(["compare", "--modes", "blocking,epoll", "-n", "6", "--repeat", "3", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "rotation (FIFO among idle workers) in 3/3 runs" in result.stdout
    doc = json.loads(out.read_text())
    assert doc["kind"] == "repeat" and doc["of"] == "compare" and len(doc["rounds"]) == 3
    assert [[r["server"]["mode"] for r in row] for row in doc["rounds"]] == [["blocking", "epoll"]] * 3
    assert "load_average" in doc["machine"]["before"]
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0 and shown.stdout == result.stdout


def test_latency_repeat_reports_medians_and_the_verdict_of_its_rounds(tmp_path: Path) -> None:
    out = tmp_path / "rep.json"
    args = ["latency", "--modes", "blocking,reuseport", "-n", "300", "-c", "4", "-w", "2", "--repeat", "2"]
    result = run_cli([*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "median (min-max) over the runs" in result.stdout
    assert "samples: its p99.9 is one of its slowest few" in result.stdout  # 300 samples is too few for p99.9
    doc = json.loads(out.read_text())
    assert doc["of"] == "latency-compare" and all(len(row) == 2 for row in doc["rounds"])
    rounds = [[LatencyResult.from_dict(r) for r in row] for row in doc["rounds"]]
    # One verdict, the one its saved rounds give, read over the lines it takes: rich wraps a verdict longer than
    # the 200 columns (an inconclusive one names pairs and figures), and how long it is is the run's.
    lines = result.stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Verdict: ")]
    assert len(starts) == 1, result.stdout
    want, shown = " ".join(f"Verdict: {latency_stability(rounds).text}".split()), ""
    for line in lines[starts[0] :]:
        shown = f"{shown} {line.strip()}".strip()
        if len(shown) >= len(want):
            break
    assert shown == want  # the same words, ending where a line ends


def test_machine_warnings_say_when_the_machine_moved() -> None:
    before = {"load_average": [3.0, 0.5, 0.5], "cpu_jiffies": {"total": 1000, "steal": 0}}
    after = {"load_average": [5.0, 1.0, 0.6], "cpu_jiffies": {"total": 2000, "steal": 100}}
    notes = machine_warnings(before, after, 4)
    assert [n.kind for n in notes] == [WarningKind.MACHINE_BUSY, WarningKind.STEAL]
    assert "already busy: load average 3.0 on 4 CPUs" in str(notes[0])
    assert "10% of the CPUs" in str(notes[1])
    quiet = {"load_average": [0.2, 0.2, 0.2], "cpu_jiffies": {"total": 1000, "steal": 0}}
    assert machine_warnings(quiet, after | {"cpu_jiffies": {"total": 2000, "steal": 1}}, 4) == []


@pytest.mark.parametrize(
    ("args", "verdict"),
    [
        (["run", "-m", "blocking", "-n", "6"], "rotation (FIFO among idle workers) in 2/2 runs"),
        (
            ["herd", "--modes", "epoll", "-w", "2", "-n", "6"],
            "one worker takes all (first-registered wins) in 2/2 runs",
        ),
    ],
)
def test_run_and_herd_repeat_too(tmp_path: Path, args: list[str], verdict: str) -> None:
    out = tmp_path / f"{args[0]}.json"
    result = run_cli([*args, "--repeat", "2", "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["of"] == args[0] and len(doc["rounds"]) == 2
    assert verdict in result.stdout


def test_a_repeated_result_draws(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "rep.json"
    args = ["compare", "--modes", "blocking,epoll", "-n", "6", "--repeat", "2", "--json", str(out)]
    assert run_cli(args).exit_code == 0
    png = tmp_path / "rep.png"
    result = run_cli(["plot", str(out), "-o", str(png)])
    assert result.exit_code == 0, result.output
    from matplotlib.image import imread

    assert imread(png).shape[1] >= 400


def test_sweep_repeats_each_accept_batch_as_its_own_variant(tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    args = ["sweep", "--accept-batch", "1,0", "-n", "300", "-c", "4", "-w", "2", "--repeat", "2", "--json", str(out)]
    result = run_cli(args)
    assert result.exit_code == 0, result.output
    assert " 1 limit " in result.stdout and " no limit " in result.stdout
    doc = json.loads(out.read_text())
    assert [[r["server"]["accept_batch"] for r in row] for row in doc["rounds"]] == [[1, 0], [1, 0]]
