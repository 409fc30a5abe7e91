"""A verdict drawn from one run of each mode (latency --modes) or cap (sweep) says how sure it is.

Six runs of one mode here ('latency -m epoll --repeat 6 -n 5000 -c 50 --work 200us', load 3-7 on 2 CPUs)
had p99s from 31.7 to 75.0 ms, and the old verdict named one of two runs of the same mode 'the tightest
tail' in 8 of their 15 pairs. Each run's own p99 interval was a few percent wide, apart in 11 of the 15: so
the sentence never calls intervals apart a difference between modes, and says where even they overlap.
"""

from __future__ import annotations

from dataclasses import replace

from test_latency import fake
from test_tails import capped

from accept_order.analysis.one_run import percentile_interval
from accept_order.core.histogram import LatencyHistogram
from accept_order.experiments.latency.experiment import compare_verdict
from accept_order.experiments.latency.result import LatencyCompareResult, LatencyResult
from accept_order.experiments.latency.sweep_report import sweep_report
from accept_order.experiments.latency.sweep_verdict import sweep_verdict

# The shape of one epoll run (1,000 latencies): 98% at 8 ms, then its tail; SLOW is the same run at twice
# the latency, as two runs of one mode were here (p99 31.7 against 59.7 ms).
FAST = [8000] * 980 + [30000] * 15 + [32000] * 5
SLOW = [2 * v for v in FAST]


def test_the_interval_is_read_at_the_binomial_ranks() -> None:
    """1..1000 µs: p99's ranks are 990 ∓ 1.96·√9.9 = 983.8 and 996.2, so samples 983 and 997 (by hand)."""
    h = LatencyHistogram()
    for us in range(1, 1001):
        h.add(us)
    assert percentile_interval(h, 99) == percentile_interval(h, 99.0)
    got = percentile_interval(h, 99)
    assert (got.low_us, got.high_us, got.samples) == (983, 997, 1000)
    few = LatencyHistogram()
    few.add(5, 10)
    assert (percentile_interval(few, 99).low_us, percentile_interval(few, 99).high_us) == (5, None)


def test_a_rank_beyond_the_samples_bounds_nothing() -> None:
    """p99 of 20 latencies: ranks 19.8 ∓ 0.87, so 18 to 21 of 20: the slowest is no upper bound (all 20 lie
    below the true p99 in 0.99^20 = 82% of such runs), nor does one latency bound anything; c86a632 clamped
    rank 21 to the slowest and read two such runs' intervals as apart."""
    twenty = LatencyHistogram()
    for us in range(1000, 21000, 1000):
        twenty.add(us)
    got = percentile_interval(twenty, 99)
    assert (got.low_us, got.high_us) == (18000, None) and got.text() == "18.00-∞"
    one = LatencyHistogram()
    one.add(700)
    assert (percentile_interval(one, 99).low_us, percentile_interval(one, 99).high_us) == (0, None)
    at_1000 = LatencyHistogram()
    for us in range(1, 1001):
        at_1000.add(us)
    assert percentile_interval(at_1000, 99.9).high_us is None  # p99.9 of 1,000: rank 999 + 1.96 > 1,000
    # 200 latencies each (the golden latency-compare's size): both p99s unbounded above, so they overlap,
    # however far apart the slowest samples are
    fast, slow = [1000] * 198 + [2000, 2100], [1000] * 197 + [9000, 9100, 9200]
    verdict = compare_verdict(LatencyCompareResult(runs=(fake("epoll", slow), fake("reuseport", fast))))
    assert verdict.tightest == "reuseport", verdict.text
    assert verdict.text.split(". How sure: ")[1].startswith("not even within these runs: "), verdict.text
    assert "(95% intervals 1.00-∞ and 1.00-∞ ms overlap, 200 latencies each)" in verdict.text


def test_two_runs_of_one_mode_are_not_called_a_difference_between_modes() -> None:
    """Their p99s are apart beyond sampling (which one run can show) and the verdict says that is not yet a
    difference: runs of the same settings differ by more, and --repeat is what tests it."""
    verdict = compare_verdict(LatencyCompareResult(runs=(fake("epoll", SLOW), fake("reuseport", FAST))))
    head, sure = verdict.text.split(". How sure: ")
    assert head.startswith("reuseport had the tightest tail of these runs: ")  # these runs, not the modes
    assert sure == (
        "one run each. reuseport's and epoll's p99s are apart beyond their own samples (95% intervals 30.00-32.00 "
        "and 60.00-64.00 ms, 1,000 latencies each), but runs of the same settings can differ by more on a busy "
        "machine, which one run cannot show: --repeat 5 says in how many runs it holds, and how significantly"
    )


def test_where_the_runs_own_samples_cannot_tell_them_apart_it_says_so() -> None:
    """p99 11% apart, p99.9 and deviation clearly lower (so 'tightest'), on 100 latencies each: p99's
    ranks are 97 to 101 (99 ∓ 1.95): from 9.00 and 9.40 ms, neither bounded above, so they overlap."""
    low = [2000] * 95 + [9000] * 4 + [9500]
    high = [2000] * 96 + [9400] + [10000] * 2 + [30000]
    verdict = compare_verdict(LatencyCompareResult(runs=(fake("epoll", high), fake("reuseport", low))))
    assert verdict.tightest == "reuseport", verdict.text
    assert verdict.text.split(". How sure: ")[1] == (
        "not even within these runs: reuseport's and epoll's p99s are within what their own samples can tell "
        "apart (95% intervals 9.00-∞ and 9.40-∞ ms overlap, 100 latencies each): --repeat 5 says whether "
        "they differ"
    )


def test_no_winner_still_says_one_run_each() -> None:
    verdict = compare_verdict(LatencyCompareResult(runs=(fake("epoll", FAST), fake("reuseport", FAST))))
    assert verdict.tightest is None
    assert verdict.text.endswith(". How sure: one run each; --repeat 5 says whether that holds from run to run")


def test_the_sweep_pick_says_how_sure_and_the_report_shows_it() -> None:
    runs = [capped(1, SLOW), capped(0, FAST)]
    verdict = sweep_verdict(runs)
    assert verdict.pick == ("no limit",)
    assert verdict.sure.startswith("How sure: one run each. no limit's and 1 limit's p99s are apart beyond")
    assert verdict.said == f"{verdict.text}. {verdict.sure}"
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    with console.capture() as capture:
        console.print(sweep_report(runs))
    assert " ".join(capture.get().split("Verdict: ", 1)[1].split()) == verdict.said
    assert sweep_verdict([capped(4, FAST)]).sure == ""  # one cap: nothing compared


def test_a_merged_files_runs_are_not_called_one_run_each() -> None:
    """'accept-order merge' of two sessions adds each mode's runs into one histogram: the sentence says so
    (it said 'one run each'); files measured at the same time (--concurrent, several client hosts) are one run."""

    def merged(run: LatencyResult, concurrent: bool) -> LatencyResult:
        files = [{"file": "a.json", "started_at": "2026-11-23T18:00"}, {"file": "b.json", "started_at": "2026-11-24"}]
        return replace(run, evidence={**run.evidence, "merged_from": {"files": files, "concurrent": concurrent}})

    apart = (fake("epoll", SLOW), fake("reuseport", FAST))
    sure = compare_verdict(LatencyCompareResult(runs=tuple(merged(r, False) for r in apart))).text
    assert ". How sure: 2 runs each, merged into one histogram. reuseport's and epoll's p99s are apart" in sure
    assert "which one histogram cannot show" in sure and "one run each" not in sure
    together = compare_verdict(LatencyCompareResult(runs=tuple(merged(r, True) for r in apart))).text
    assert ". How sure: one run each. " in together and "which one run cannot show" in together
    tied = compare_verdict(LatencyCompareResult(runs=tuple(merged(fake(m, FAST), False) for m in ("epoll", "poll"))))
    assert tied.text.endswith("How sure: 2 runs each, merged into one histogram; --repeat 5 says whether that holds "
                              "from run to run")  # fmt: skip
    caps = sweep_verdict([merged(capped(1, SLOW), False), merged(capped(0, FAST), False)])
    assert caps.sure.startswith("How sure: 2 runs each, merged into one histogram. no limit's and 1 limit's p99s")


def test_the_sentence_is_told_on_the_pair_least_told_apart() -> None:
    """reuseport (FAST) is apart from epoll (SLOW, the closest p99) beyond their samples, but poll, whose p99
    is farther (70 ms), has a spread tail: its interval reaches down to 31 ms, within reuseport's 30-32. The
    sentence says so of that pair, not 'apart' of the closest (as it did)."""
    spread = [8000] * 982 + [31000] * 7 + [70000] * 11
    runs = (fake("epoll", SLOW), fake("reuseport", FAST), fake("poll", spread))
    verdict = compare_verdict(LatencyCompareResult(runs=runs))
    assert verdict.tightest == "reuseport", verdict.text
    assert verdict.text.split(". How sure: ")[1].startswith(
        "not even within these runs: reuseport's and poll's p99s are within what their own samples can tell apart "
        "(95% intervals 30.00-32.00 and 31.00-70.00 ms overlap"
    ), verdict.text
    # without poll the closest pair is apart, as before
    alone = compare_verdict(LatencyCompareResult(runs=runs[:2])).text
    assert ". How sure: one run each. reuseport's and epoll's p99s are apart" in alone
