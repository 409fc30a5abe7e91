"""The tails verdict of `latency --modes`, on synthetic histograms that decide each branch: one tail clearly
tighter, no clear difference, and mixed (each run lower on different figures), including issue 19's case
(p99 within 10% while the deviation was 0.66x and p99.9 differed by 17%, once called "all within 10%").
Then sweep's verdict: a cap that lost connections (failures, or the kernel's listen-queue drops) ranks after
every cap that served all, however low its latency, and the counters say why."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console
from test_latency import TIGHT, WIDE, fake

from accept_order.analysis.tails import tail_verdict
from accept_order.experiments.latency.report import sweep_report
from accept_order.experiments.latency.result import LatencyResult
from accept_order.experiments.latency.sweep_verdict import sweep_verdict

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


def test_a_tighter_tail_against_a_lower_middle_is_mixed_and_says_so() -> None:
    """Measured here (latency --modes blocking,reuseport -n 5000 -c 20 --work-us 1000 --pin): blocking lower on
    p99, p99.9 and deviation, reuseport on p50 and average. The figures disagree: mixed, each side named."""
    blocking = [16_000] * 900 + [20_000] * 89 + [35_000] * 10 + [40_000]
    reuseport = [10_000] * 900 + [19_000] * 89 + [51_000] * 10 + [60_000]
    verdict = tail_verdict([fake("blocking", blocking), fake("reuseport", reuseport)])
    assert (verdict.kind, verdict.tightest) == ("mixed", None)
    assert verdict.text.startswith("mixed: blocking's whole tail is lower: p99 (35.00 vs 51.00 ms, 0.69×), p99.9 ")
    assert "; reuseport's p50 (10.00 vs 16.00 ms, 0.62×) and average" in verdict.text


def test_names_label_the_runs() -> None:
    verdict = tail_verdict([fake("epoll", WIDE), fake("epoll", TIGHT)], names=["no limit", "accept-batch 1"])
    assert verdict.tightest == "accept-batch 1" and "lower than no limit's" in verdict.text


# -- sweep ----------------------------------------------------------------------------------------------


def capped(batch: int, values_us: list[int], failed: int = 0, overflows: int = 0, shared: bool = True) -> LatencyResult:
    counters = {"TcpExtListenOverflows": overflows, "TcpExtListenDrops": overflows} if overflows else {}
    evidence: dict[str, Any] = {"counters": counters, "counters_available": True, "shared_namespace": shared}
    run = fake("epoll", values_us, errors={"timeout": failed} if failed else None)
    return dataclasses.replace(run, server=run.server.replace(accept_batch=batch), evidence=evidence)


def test_a_cap_that_lost_connections_ranks_after_those_that_served_all() -> None:
    """Issue 19: the capped runs lost connections to listen-queue overflows; their served requests' tails
    must not crown them (nor crown anything over them without saying they lost connections)."""
    runs = [capped(1, TIGHT, failed=488, overflows=1974), capped(4, TIGHT, overflows=1512), capped(0, WIDE)]
    verdict = sweep_verdict(runs)
    assert verdict.ranking == ("no limit", "4 limit", "1 limit")  # 4 limit lost none outright: fewer lost first
    assert verdict.lost == ("4 limit", "1 limit")
    assert verdict.text == (
        "no limit is the only cap that served every connection (p99 60.00 ms). Ranked after it, as they lost "
        "connections (their latencies cover only what they served): 4 limit (ListenOverflows +1512, ListenDrops "
        "+1512), 1 limit (488 of 588 failed: 488 timeout; ListenOverflows +1974, ListenDrops +1974). "
        "ListenOverflows: a handshake completed while the accept queue (backlog 511) was full; these counters are "
        "host-wide (shared network namespace) and may include other traffic"
    )


def test_the_caps_that_served_all_are_judged_on_their_tails() -> None:
    verdict = sweep_verdict([capped(0, WIDE), capped(4, TIGHT, shared=False), capped(1, TIGHT, failed=3)])
    assert verdict.ranking == ("4 limit", "no limit", "1 limit") and verdict.lost == ("1 limit",)
    assert verdict.text.startswith("of the caps that served every connection, 4 limit has the tightest tail: ")
    assert verdict.text.endswith("1 limit (3 of 103 failed: 3 timeout)")  # no counter moved: nothing about them
    everyone = sweep_verdict([capped(0, WIDE), capped(4, TIGHT)])
    assert everyone.lost == () and everyone.text.startswith("4 limit has the tightest tail: ")


def test_when_every_cap_lost_connections_none_wins() -> None:
    verdict = sweep_verdict([capped(1, TIGHT, overflows=5, shared=False), capped(0, WIDE, failed=1)])
    assert verdict.lost == ("1 limit", "no limit")
    assert verdict.text.startswith("every cap lost connections: no cap wins on latency")
    assert "host-wide" not in verdict.text  # a private namespace's counters are the run's own
    assert sweep_verdict([capped(4, TIGHT)]).text == "one cap only (4 limit): nothing to compare it with"
    alone = sweep_verdict([capped(4, TIGHT, failed=2)]).text
    assert alone == (
        "one cap only (4 limit): nothing to compare it with; it lost connections (2 of 102 failed: 2 timeout)"
    )


def test_the_sweep_report_shows_the_kernel_counters_and_the_verdict() -> None:
    runs = [capped(1, TIGHT, failed=488, overflows=1974), capped(0, WIDE)]
    console = Console(width=300, record=True, color_system=None)
    with console.capture() as capture:
        console.print(sweep_report(runs))
    lines = capture.get().splitlines()
    shared = "(host-wide: shared network namespace, may include other TCP traffic on this host)"
    assert f"  1 limit: kernel counters: ListenOverflows +1974, ListenDrops +1974 {shared}" in lines
    assert f"  no limit: kernel counters: none of 0 drop/overflow counters moved {shared}" in lines
    verdict = " ".join(capture.get().split("Verdict: ", 1)[1].split())  # wrapped at 300 columns
    assert verdict == sweep_verdict(runs).text


def test_a_run_that_lost_connections_cannot_have_the_tightest_tail() -> None:
    """latency --modes: the run with the tightest served tail lost 40 connections (its slowest requests are
    not in its histogram): the two that served all are compared, and the loss is said."""
    lossy = fake("reuseport", TIGHT, errors={"timeout": 40})
    verdict = tail_verdict([lossy, fake("blocking", TIGHT), fake("epoll", WIDE)])
    assert (verdict.kind, verdict.tightest) == ("clear", "blocking")
    assert "reuseport lost 40 connections" in verdict.text
    only = tail_verdict([lossy, fake("epoll", WIDE)])
    assert only.tightest == "epoll" and "the only one that served every connection" in only.text
