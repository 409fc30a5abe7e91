"""A Ctrl-C between two modes of `latency --modes epoll,reuseport --pool -c 8 --duration 1s` (1.5 s in: epoll
whole, reuseport not started) printed epoll's figures and 'Verdict: need at least two runs that served requests
to compare tails', as if reuseport had run and served nothing; nothing in the report said the stop came
between them (the file said interrupted, no run was cut short). The same for a sweep stopped between caps.
The verdict (and the sweep's stop line) now say which run the stop came after and that the rest were not run."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console
from test_cut_short_run_tails import TIGHT, run

from accept_order.experiments.latency.experiment import compare_verdicts, latency_compare_report, sweep_result_report
from accept_order.experiments.latency.result import LatencyCompareResult, SweepResult

AFTER = "(stopped after epoll: the modes after it were not run)"


def plain_text(renderable: object) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_a_stop_between_two_modes_is_said_beside_the_verdict() -> None:
    stopped = LatencyCompareResult((run("epoll", TIGHT),), interrupted=True)
    said = plain_text(latency_compare_report(stopped))
    assert f"Verdict: need at least two runs that served requests to compare tails {AFTER}" in said, said
    assert compare_verdicts(stopped)["verdict"]["text"].endswith(AFTER)
    # a whole comparison, and one whose last run was cut short (its own note says so), say nothing of it
    assert AFTER not in plain_text(latency_compare_report(LatencyCompareResult((run("epoll", TIGHT),))))
    cut = LatencyCompareResult((replace(run("epoll", TIGHT), interrupted=True),), interrupted=True)
    assert "the modes after it were not run" not in plain_text(latency_compare_report(cut))


def test_a_sweep_stopped_between_two_caps_says_the_rest_were_not_run() -> None:
    capped = run("epoll", TIGHT)
    capped = replace(capped, server=replace(capped.server, accept_batch=1))
    said = plain_text(sweep_result_report(SweepResult((capped,), interrupted=True)))
    assert (
        "Stopped early: interrupted after the 1 limit cap; kept: what was measured before it (1 cap); the caps " in said
    )
    assert "Stopped early" not in plain_text(sweep_result_report(SweepResult((capped,))))
