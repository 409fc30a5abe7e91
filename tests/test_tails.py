"""The tails verdict of `latency --modes`, on synthetic histograms that decide each branch: one tail clearly
tighter, no clear difference, and mixed (each run lower on different figures), including issue 19's case
(p99 within 10% while the deviation was 0.66x and p99.9 differed by 17%, once called "all within 10%")."""

from __future__ import annotations

from test_latency import TIGHT, WIDE, fake

from accept_order.analysis.tails import tail_verdict

# 1000 samples each, so p99.9 is one rank (999) and can be set exactly.
NARROW = [2000] * 900 + [3000] * 50 + [4000] * 48 + [7000, 8000]  # p99 4.0, p99.9 7.0 ms, dev 0.53
SPREAD = [400] * 300 + [2000] * 600 + [3000] * 50 + [3900] * 48 + [6000, 8000]  # p99 3.9, p99.9 6.0, dev 0.97


def test_issue_19_case_is_mixed_not_within_ten_percent() -> None:
    blocking, reuseport = fake("blocking", NARROW), fake("reuseport", SPREAD)
    verdict = tail_verdict([blocking, reuseport])
    assert (verdict.kind, verdict.tightest) == ("mixed", None)
    assert "within 10%" not in verdict.text.split(";")[0]
    assert verdict.text == (
        "mixed: blocking's deviation (0.53 vs 0.97 ms, 0.55×) is lower; reuseport's p99.9 (6.00 vs 7.00 ms, 0.86×) "
        "and average (1.67 vs 2.16 ms, 0.77×) are lower; p50 and p99 within 10% (blocking 2.00, 4.00 ms; reuseport "
        "2.00, 3.90 ms)"
    )
    # Reference ratios are to the lower p99 (reuseport's): blocking's deviation is 0.55x of it.
    assert verdict.ratios["blocking"]["dev"] < 1 / 1.1 and verdict.ratios["blocking"]["p99.9"] > 1.1


def test_the_tighter_tail_is_named_whichever_run_comes_first() -> None:
    """Lower on every tail figure, higher on none (the middle is within 10%): clear, in either order."""
    tight, wide = fake("blocking", TIGHT), fake("reuseport", WIDE)
    for runs in ([wide, tight], [tight, wide]):
        verdict = tail_verdict(runs)
        assert (verdict.kind, verdict.tightest) == ("clear", "blocking")


def test_only_a_middle_difference_is_no_clear_difference_in_the_tails() -> None:
    """p50 differs by more than 10% but p99, p99.9 and deviation do not: the tails are not called different,
    and the text says which figure did differ."""
    base = [1000] * 499 + [1500] + [2000] * 490 + [5000] * 10  # p50 is rank 500: 1.5 ms here, 1.0 below
    lower_middle = [1000] * 500 + [2000] * 490 + [5000] * 10
    verdict = tail_verdict([fake("blocking", base), fake("epoll", lower_middle)])
    assert (verdict.kind, verdict.tightest) == ("tight", None)
    assert verdict.text.startswith("no clear difference in the tails (p99, p99.9 and deviation within 10%): ")
    assert "epoll's p50 (1.00 vs 1.50 ms, 0.67×) is lower" in verdict.text


def test_three_runs_name_a_tightest_only_when_it_beats_each_other() -> None:
    one_clear = tail_verdict([fake("reuseport", WIDE), fake("blocking", TIGHT), fake("epoll", WIDE)])
    assert (one_clear.kind, one_clear.tightest) == ("clear", "blocking")
    assert one_clear.text.count("lower than") == 2  # against reuseport, and against epoll
    # blocking ties with epoll: neither is the tightest; each pair is named.
    tied = tail_verdict([fake("reuseport", WIDE), fake("blocking", TIGHT), fake("epoll", TIGHT)])
    assert (tied.kind, tied.tightest) == ("mixed", None)
    assert "reuseport vs blocking: " in tied.text and "blocking vs epoll: " in tied.text


def test_names_label_the_runs() -> None:
    verdict = tail_verdict([fake("epoll", WIDE), fake("epoll", TIGHT)], names=["no limit", "accept-batch 1"])
    assert verdict.tightest == "accept-batch 1" and "lower than no limit's" in verdict.text
