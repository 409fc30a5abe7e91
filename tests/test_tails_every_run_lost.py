"""latency --modes where every mode lost connections compared their tails as if each had served all: 'latency
--modes epoll,reuseport -w 2 --rate 6000 --duration 3s --backlog 16 --work 300us --timeout 3s' (load 3-5, Linux 6.18,
2 vCPUs; nstat's ListenOverflows +987, the two runs' own 453 + 534) failed 115 and 39 connections and read 'Verdict:
mixed: ...' with no word of them, where one mode losing some beside two that lost none is left out and said so, and
sweep names no cap when every cap lost some. Each histogram leaves its own failures out, the more the more it lost:
no tail is named on them now, and the figures are still said, as measured."""

from __future__ import annotations

from test_latency import TIGHT, WIDE, fake

from accept_order.analysis.tails import tail_verdict


def test_no_tail_is_named_where_every_run_lost_connections() -> None:
    tight, wide = fake("blocking", TIGHT, {"timeout": 5}), fake("reuseport", WIDE, {"timeout": 7})
    assert tail_verdict([tight, fake("reuseport", WIDE)]).tightest == "reuseport"  # the one that served all
    verdict = tail_verdict([tight, wide])
    assert (verdict.tightest, verdict.kind) == (None, "mixed"), verdict
    assert verdict.text.startswith(
        "no tail named: every run lost connections (blocking 5, reuseport 7), and each one's latency leaves its own "
        "out; as measured, blocking had the tightest tail of these runs: "
    ), verdict.text
    assert set(verdict.ratios) == {"reuseport"}  # the figures as measured, against the lower p99


def test_runs_that_lost_none_are_compared_as_before() -> None:
    verdict = tail_verdict([fake("blocking", TIGHT), fake("reuseport", WIDE)])
    assert (verdict.tightest, verdict.kind) == ("blocking", "clear")
    assert verdict.text.startswith("blocking had the tightest tail of these runs: ")
