"""A pool held by a run stopped early is said to be held until the stop, not for the whole run.

`latency -w 4 --pool -c 16 --requests-per-connection 0 --work 1ms --duration 30s` stopped by SIGINT 5.70 s in
(load 2.6, Linux 6.18, 2 vCPUs) read 'Verdict: worker 0 held 12 of the 16 connections kept for the whole run', under
its own 'Interrupted: the epoll run was stopped after 5.70 s of load'; a `--modes` run stopped in its second mode
read 'Connections per worker, each kept for the whole run' of both. What was true: they were held until the stop."""

from __future__ import annotations

import dataclasses

from test_small_sentences_held_nothing import pool_run

from accept_order.experiments.latency.kept_tail import kept_tail_verdict
from accept_order.experiments.latency.pool_split import pool_split_note
from accept_order.experiments.latency.result import LatencyResult

EXITED = {"worker_exit": {"why": "attached worker 1 (pid 4242) exited 2.10 s into the run"}}


def _verdict(run: LatencyResult) -> str:
    said = kept_tail_verdict(run)
    assert said is not None
    return said


def test_a_run_stopped_by_a_signal_held_them_until_the_stop() -> None:
    run = pool_run("epoll", (12, 4, 0, 0), p99_us=60_000)
    assert "12 of the 16 connections kept for the whole run (75%" in _verdict(run)
    stopped = _verdict(dataclasses.replace(run, interrupted=True))
    assert "12 of the 16 connections kept until the stop (75%" in stopped, stopped
    assert "whole run" not in stopped, stopped


def test_a_run_an_attached_workers_exit_stopped_held_them_until_the_stop() -> None:
    run = dataclasses.replace(pool_run("epoll", (8, 8), p99_us=60_000), evidence=EXITED)
    said = _verdict(run)
    assert said.startswith("Verdict: the 2 workers held 8 each of the 16 connections kept until the stop: "), said


def test_modes_name_the_run_that_was_stopped() -> None:
    epoll, reuseport = pool_run("epoll", (16, 0, 0, 0), 60_000), pool_run("reuseport", (4, 5, 3, 4), 60_000)
    whole = pool_split_note([epoll, reuseport])
    assert whole.startswith("Connections per worker, each kept for the whole run and so its worker's load"), whole
    cut = pool_split_note([epoll, dataclasses.replace(reuseport, interrupted=True)])
    assert cut.startswith(
        "Connections per worker, each kept for the whole run (reuseport: until the stop) and so its worker's load"
    ), cut
