"""A run (or a sweep cap) Ctrl-C cut short is left out of the tail comparison (327b450), for its connections in
flight at the stop are the stop's (aborted). Connections it failed before the stop are its own, and were said
before that change ('reuseport lost 40'): the verdict still says them, and does not ask for 'two runs that served
requests' where two did."""

from __future__ import annotations

from dataclasses import replace

from test_cut_short_run_tails import TIGHT, WIDE, run

from accept_order.analysis.tails import tail_verdict
from accept_order.core.protocol import ABORTED
from accept_order.experiments.latency.sweep_verdict import sweep_verdict


def cut(mode: str, errors: dict[str, int]) -> object:
    return replace(run(mode, TIGHT), errors=errors, interrupted=True, wall_s=0.21)


def test_a_run_cut_short_still_says_what_it_lost_before_the_stop() -> None:
    verdict = tail_verdict([run("epoll", WIDE), cut("reuseport", {ABORTED: 10, "ECONNRESET": 40})])
    assert "reuseport lost 40 connections before the stop" in verdict.text, verdict.text
    assert "need at least two runs that served" not in verdict.text, verdict.text
    assert verdict.text.startswith("no tail to compare: reuseport was cut short by the stop"), verdict.text
    assert verdict.tightest is None


def test_only_the_stops_aborts_say_no_loss() -> None:
    verdict = tail_verdict([run("epoll", WIDE), cut("reuseport", {ABORTED: 10})])
    assert "lost" not in verdict.text and "reuseport was cut short by the stop" in verdict.text, verdict.text
    whole = tail_verdict([run("epoll", WIDE), run("reuseport", TIGHT), cut("blocking", {ABORTED: 3, "timeout": 2})])
    assert whole.tightest == "reuseport", whole.text
    assert whole.text.endswith(
        "(blocking was cut short by the stop: not compared; blocking lost 2 connections before the stop)"
    ), whole.text


def test_a_sweep_cap_cut_short_still_says_what_it_lost_before_the_stop() -> None:
    def capped(batch: int, values_us: list[int]) -> object:
        r = run("epoll", values_us * 50)  # enough latencies for the samples to tell a p99 apart (one_run.py)
        return replace(r, server=r.server.replace(accept_batch=batch))

    stopped = replace(capped(32, TIGHT), errors={ABORTED: 18, "ECONNREFUSED": 7}, interrupted=True, wall_s=0.11)
    alone = sweep_verdict([stopped])
    assert alone.text.endswith("it was cut short by the stop (it failed 7 ECONNREFUSED before the stop)"), alone.text
    three = sweep_verdict([capped(1, WIDE), capped(4, TIGHT), stopped])
    assert three.pick == ("4 limit",) and three.ranking[-1] == "32 limit", three
    assert three.text.startswith(
        "32 limit was cut short by the stop: not compared. 32 limit failed 7 ECONNREFUSED before the stop. Pick"
    ), three.text
    clean = sweep_verdict([capped(1, WIDE), replace(stopped, errors={ABORTED: 18})])
    assert "before the stop" not in clean.text and "lost" not in clean.text, clean.text
